"""The README is a product page that stays true: its test command is CI's, its links resolve, the generated
results block keeps its markers, and `new --help` says what docs/manifest.md says about --min-bytes."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from hotkernel.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_the_readme_test_command_is_what_ci_runs() -> None:
    commands = [line for block in _bash_blocks(README) for line in block.splitlines() if "pytest" in line]
    assert len(commands) == 1, commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0] in ci, f"README's test command is not a line of .ci/run: {commands[0]}"
    assert " -n auto" in commands[0]  # pytest-xdist: the product's tests on every core


def test_the_first_command_runs_the_loop_on_the_cpu_target() -> None:
    first = _bash_blocks(README.split("## Two commands", 1)[1])[0].strip()
    assert first.endswith("hotkernel sync --from-scratch cpu_rmsnorm -n 3"), first
    manifest = (ROOT / "hotkernel.yaml").read_text(encoding="utf-8")
    assert re.search(r"^  cpu_rmsnorm:\n(?:    .*\n)*?    device: cpu$", manifest, flags=re.M)


def test_the_sections_come_in_product_page_order() -> None:
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    assert headings == ["Two commands", "A one-minute tour", "Results", "Use it from an agent", "Documentation"]
    assert README.count("<!-- hotkernel:headline:start") == 1 and README.count("<!-- hotkernel:headline:end -->") == 1


def test_every_relative_link_resolves() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to a missing {target}"


def _help_of(command: str, option: str) -> str:
    found = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return next(p.help or "" for p in found.params if option in getattr(p, "opts", ()))


def test_new_help_and_the_manifest_doc_agree_on_min_bytes() -> None:
    help_text = _help_of("new", "--min-bytes")
    row = next(line for line in (ROOT / "docs" / "manifest.md").read_text().splitlines() if "`--min-bytes`" in line)
    for words in ("x 1.25 on CUDA, x 2 on CPU", "faster_than_floor", "rotated inputs", "cache-resident"):
        assert words in help_text and words in row, words
    assert "Default: bytes" not in help_text  # the floor is the rotated inputs, not `bytes`
