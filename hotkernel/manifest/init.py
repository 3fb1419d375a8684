"""``hotkernel init``: a workspace that starts itself.

Writes ``hotkernel.yaml`` (no targets yet) whose schema modeline points at ``.hotkernel/hotkernel.schema.json``,
a copy of the installed schema: it resolves offline and in any editor, and it is the schema of the hotkernel
that wrote it (a URL would need a site serving every version; ``init --force`` refreshes the copy). Adds the
scratch state under ``.hotkernel/`` to ``.gitignore`` (created, or completed line by line: never rewritten), and
writes a GitHub Actions workflow that runs ``hotkernel sync --check`` and ``hotkernel leaderboard --check`` on
every pull request (no GPU and no torch needed). Refuses to overwrite an existing manifest or workflow without
``force``: nothing is written then.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from hotkernel import __version__
from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError
from hotkernel.manifest.edit import SCHEMA_MODELINE_PREFIX, new_manifest_text
from hotkernel.manifest.schema import INIT_SCHEMA, packaged_schema_path
from hotkernel.workspace.paths import MANIFEST_NAME

SCHEMA_COPY = INIT_SCHEMA.as_posix()
WORKFLOW = ".github/workflows/hotkernel.yml"
GITIGNORE = ".gitignore"
# scratch state under .hotkernel/: the workspace lock, temp files, run store, profiler and compiler outputs.
# .hotkernel/calibration.json and the schema copy stay committable.
IGNORED = (
    "/.hotkernel/tmp/",
    "/.hotkernel/lock",
    "/.hotkernel/lock.info",
    "/.hotkernel/runs/",
    "/.hotkernel/profiles/",
    "/.hotkernel/traces/",
    "/.hotkernel/disasm/",
    "/.hotkernel/inductor/",
)
MANIFEST_HELP = (
    "# A hotkernel workspace: every key is in docs/manifest.md. Add a target with\n"
    "#   hotkernel new NAME --from ./kernels/file.py:function --shape 4096x8192 --dtype bf16\n"
    "# then edit targets/NAME/candidate.py and run `hotkernel sync`.\n"
)


class InitResult(BaseModel):
    """What ``init`` wrote (workspace-relative paths)."""

    root: str = Field(description="the workspace root")
    written: list[str] = Field(default_factory=list, description="files created or replaced")
    updated: list[str] = Field(default_factory=list, description="files completed in place (.gitignore)")


def manifest_text() -> str:
    """The new manifest: schema modeline, how to add a target, ``version: 1`` and no targets."""
    text = new_manifest_text(SCHEMA_COPY)
    head, _, rest = text.partition("\n")
    assert head.startswith(SCHEMA_MODELINE_PREFIX)
    return f"{head}\n{MANIFEST_HELP}{rest}"


def workflow_text() -> str:
    """A GitHub Actions job that fails a pull request whose records, lock or board are out of date."""
    return f"""# hotkernel's gates, without a GPU: exit 2 when a target is out of date (run `hotkernel sync` on a GPU
# machine and commit its records), 1 on an error; leaderboard --check names every stale or unvouched file.
name: hotkernel
on: [push, pull_request]
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: pip install "hotkernel=={__version__}"
      - run: hotkernel sync --check
      - run: hotkernel leaderboard --check
"""


def gitignore_text(existing: str | None) -> str | None:
    """``existing`` with the missing scratch-state lines appended (None: nothing to add)."""
    have = {line.strip() for line in (existing or "").splitlines()}
    missing = [line for line in IGNORED if line not in have]
    if not missing:
        return None
    head = existing or ""
    if head and not head.endswith("\n"):
        head += "\n"
    block = "# hotkernel scratch state\n" if existing is None or "# hotkernel" not in existing else ""
    return head + ("\n" if head else "") + block + "\n".join(missing) + "\n"


def init_workspace(root: str | Path, *, force: bool = False, ci: bool = True) -> InitResult:
    """Write the manifest, the schema copy, the ``.gitignore`` lines and (``ci``) the workflow in ``root``."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise HotkernelError(f"init: {base} is not a directory; create it first")
    owned = [MANIFEST_NAME] + ([WORKFLOW] if ci else [])
    for name in owned:
        if (base / name).exists() and not force:
            raise HotkernelError(f"init: {base / name} already exists; pass --force to overwrite it")
    files = {MANIFEST_NAME: manifest_text(), SCHEMA_COPY: packaged_schema_path().read_text(encoding="utf-8")}
    if ci:
        files[WORKFLOW] = workflow_text()
    result = InitResult(root=str(base))
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        result.written.append(name)
    ignore = base / GITIGNORE
    existing = ignore.read_text(encoding="utf-8") if ignore.is_file() else None
    completed = gitignore_text(existing)
    if completed is not None:
        atomic_write_text(ignore, completed)
        (result.written if existing is None else result.updated).append(GITIGNORE)
    return result


def init_lines(result: InitResult) -> list[str]:
    """What init did, then the next step."""
    lines = [f"wrote {name}" for name in result.written]
    lines += [f"added hotkernel's scratch state to {name}" for name in result.updated]
    lines.append(
        "next: hotkernel new NAME --from ./file.py:function --shape 4096x8192 --dtype bf16, "
        "then edit targets/NAME/candidate.py and run hotkernel sync"
    )
    return lines
