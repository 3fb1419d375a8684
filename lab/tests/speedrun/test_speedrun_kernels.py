"""Every speedrun variant (a named parameter set of lab/speedrun/<target>/<idea>.py) is correct at small shapes.

One subprocess (TRITON_INTERPRET=1, CPU tensors) runs lab/speedrun/check_variants.py over all variants; each
variant is then one test case, failing with the checker's own line (error ratio or exception). The timing and
the headline shapes are checked on the H200 (`--device cuda --shapes headline`). The variant table of
lab/speedrun/README.md (every recorded variant name -> module and parameters) is checked against the modules.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

REPO = Path(__file__).resolve().parents[3]
SPEEDRUN = REPO / "lab" / "speedrun"


def _checker() -> ModuleType:
    """lab/speedrun/check_variants.py (stdlib at import time: no torch needed to list the variants)."""
    spec = importlib.util.spec_from_file_location("speedrun_check_variants", SPEEDRUN / "check_variants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CV = _checker()
TARGETS = CV.TARGETS
VARIANTS = [(t, name) for t in TARGETS for name in CV.variant_index(t)]

pytestmark = pytest.mark.slow


def _has_triton() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch, triton"], capture_output=True, timeout=120)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def interpreter_results() -> dict[tuple[str, str], list[dict]]:
    """Run the checker once for all variants; results keyed by (target, variant)."""
    if not _has_triton():
        pytest.skip("torch and triton are not importable by this interpreter")
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(SPEEDRUN / "check_variants.py"), "--device", "cpu"],
                          capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    results: dict[tuple[str, str], list[dict]] = {}
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        results.setdefault((row["target"], row["variant"]), []).append(row)
    assert results, f"checker printed nothing (rc={proc.returncode}): {proc.stderr[-2000:]}"
    return results


def test_every_target_has_several_variants() -> None:
    for target in TARGETS:
        assert sum(1 for t, _ in VARIANTS if t == target) >= 3, f"{target}: fewer than 3 candidates"


def test_every_variant_has_one_hypothesis_and_no_stale_one() -> None:
    for target in TARGETS:
        for path in CV.idea_files(target):
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            named = re.findall(r"^- `(\w+)` \(", doc, re.MULTILINE)
            assert sorted(named) == sorted(CV._variants_literal(path)), f"{path}: docstring bullets vs VARIANTS"
    for target, name in VARIANTS:
        assert len(CV.variant_hypothesis(target, name)) > 40, f"{target}/{name}: no real hypothesis"


def test_a_hypothesis_ends_at_the_blank_line_after_its_entry() -> None:
    """The last entry of a list is followed by a blank line and the module's prose (a record's note once carried
    that prose: results/int4_gemv/20261203T163934Z.json)."""
    hypothesis = CV.variant_hypothesis("int4_gemv", "mma_szbfx_bn256_sk16_w4_st2")
    assert hypothesis.endswith("and half the shared memory."), hypothesis


def _readme_table() -> dict[tuple[str, str], tuple[str, dict]]:
    """(target, old file stem) -> (module file, parameters) from the table in lab/speedrun/README.md."""
    rows = {}
    for line in (SPEEDRUN / "README.md").read_text().splitlines():
        found = re.fullmatch(r"\| `(\w+)/(\w+)\.py` \| `(\w+/\w+\.py)` \| `(\{.*\})` \|", line.strip())
        if found:
            target, old, module, params = found.groups()
            rows[(target, old)] = (module, ast.literal_eval(params))
    return rows


def test_readme_table_maps_every_variant_to_its_module_and_parameters() -> None:
    table = _readme_table()
    assert sorted(table) == sorted(VARIANTS), "lab/speedrun/README.md's table and the VARIANTS of the modules differ"
    for (target, name), (module, params) in table.items():
        path, actual = CV.variant_index(target)[name]
        assert (f"{target}/{path.name}", actual) == (module, params), f"README row for {target}/{name}"


def test_candidate_source_picks_the_named_parameters() -> None:
    """A candidate file is its module, one line that binds `kernel` to the variant's parameters, its author
    (`WHO`, what `hotkernel sync` records), and the block that runs it alone under the contract."""
    for target, name in VARIANTS:
        source = CV.candidate_source(target, name)
        *_, bind, who, run_alone = ast.parse(source).body
        assert ast.unparse(bind) == f"kernel = make_kernel(**VARIANTS[{name!r}])", f"{target}/{name}"
        module = CV.variant_index(target)[name][0].name
        assert ast.literal_eval(who.value) == CV.variant_who(target, name)
        assert CV.variant_who(target, name).startswith("Claude (Anthropic), Triton kernel lab/speedrun/")
        assert CV.variant_who(target, name).endswith(f"lab/speedrun/{target}/{module}, variant {name}")
        assert ast.unparse(run_alone.test) == "__name__ == '__main__'"
        assert ast.unparse(run_alone.body[-1]) == "hk_contract.main(__file__)"


@pytest.mark.parametrize(("target", "variant"), VARIANTS, ids=[f"{t}/{v}" for t, v in VARIANTS])
def test_variant_matches_fp32_reference(interpreter_results: dict, target: str, variant: str) -> None:
    rows = interpreter_results.get((target, variant))
    assert rows, f"{target}/{variant}: no result from the checker"
    assert len(rows) >= 2, f"{target}/{variant}: expected every small case to run, got {rows}"
    for row in rows:
        assert row["ok"], f"{target}/{variant} case {row['case']}: {row}"
        assert row["worst_ratio"] <= 1.0


def test_checker_rejects_a_wrong_kernel(tmp_path: Path) -> None:
    """The comparison has teeth: a kernel reading tinygemm's nibbles in the wrong order fails it."""
    if not _has_triton():
        pytest.skip("torch and triton are not importable by this interpreter")
    script = f"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, {str(SPEEDRUN)!r})
import torch
import check_variants as cv
torch.manual_seed(0)
kernel = cv.variant_kernel("int4_gemv", "tile_bn32_g4")
name, inputs, kwargs, ref = cv.make_cases("int4_gemv", "small", "cpu")[0]
x, packed, sz = inputs
swapped = ((packed >> 4) & 0x0F0F0F0F) | ((packed & 0x0F0F0F0F) << 4)  # swap nibbles within each byte
good = cv.compare(kernel(x, packed, sz, **kwargs), ref(), "int4_gemv", "cpu")[0]
bad = cv.compare(kernel(x, swapped, sz, **kwargs), ref(), "int4_gemv", "cpu")[0]
print(good, bad)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "False"]


def test_candidate_file_runs_like_the_variant(tmp_path: Path) -> None:
    """The self-contained candidate file of a variant computes exactly what the variant's kernel computes."""
    if not _has_triton():
        pytest.skip("torch and triton are not importable by this interpreter")
    script = f"""
import importlib.util, os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, {str(SPEEDRUN)!r})
import torch
import check_variants as cv
torch.manual_seed(0)
for target, name in [("rmsnorm", "row_w4"), ("decode_attention", "sm_split_last_arriver")]:
    path = {str(tmp_path)!r} + f"/{{name}}.py"
    open(path, "w").write(cv.candidate_source(target, name))
    spec = importlib.util.spec_from_file_location(f"candidate_{{name}}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    case, inputs, kwargs, ref = cv.make_cases(target, "small", "cpu")[0]
    same = torch.equal(module.kernel(*inputs, **kwargs), cv.variant_kernel(target, name)(*inputs, **kwargs))
    print(same, cv.compare(module.kernel(*inputs, **kwargs), ref(), target, "cpu")[0])
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "True", "True", "True"]


def test_a_candidate_file_runs_alone_under_the_contract(tmp_path: Path) -> None:
    """`python targets/<name>/candidate.py` of a written variant prints the contract's one JSON line (here, on a
    machine without CUDA: invalid, device_available)."""
    repo = Path(__file__).resolve().parents[3]
    folder = tmp_path / "targets" / "rmsnorm"
    folder.mkdir(parents=True)
    shutil.copyfile(repo / "targets" / "hk_contract.py", tmp_path / "targets" / "hk_contract.py")
    shutil.copyfile(repo / "targets" / "rmsnorm" / "baseline.py", folder / "baseline.py")
    name = next(n for t, n in VARIANTS if t == "rmsnorm")
    (folder / "candidate.py").write_text(CV.candidate_source("rmsnorm", name))
    proc = subprocess.run([sys.executable, str(folder / "candidate.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout + proc.stderr[-2000:]
    run = json.loads(lines[0])
    assert run["role"] == "candidate" and run["script_sha256"]
    if not torch.cuda.is_available():
        assert run["status"] == "invalid" and run["reason"].startswith("device_available"), run["reason"]


@pytest.mark.parametrize("target", ["rmsnorm", "softmax", "gemv", "int4_gemv", "decode_attention"])
def test_every_kept_candidate_runs_alone(target: str) -> None:
    """A kept candidate ends in the block that runs it under the workspace's contract (docs/architecture.md:
    `python targets/<name>/candidate.py` is one run)."""
    tree = ast.parse((REPO / "targets" / target / "candidate.py").read_text())
    guards = [node for node in tree.body
              if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"]
    assert guards, f"targets/{target}/candidate.py has no `if __name__ == \"__main__\":` block"
    assert "hk_contract.main(__file__)" in ast.unparse(guards[-1])


@pytest.mark.parametrize("target", ["rmsnorm", "softmax", "gemv", "int4_gemv", "decode_attention"])
def test_every_kept_candidate_names_its_author(target: str) -> None:
    """`hotkernel sync` records a candidate's own `WHO`; without one it falls back to the machine's git user, which
    is not who wrote the kernel."""
    tree = ast.parse((REPO / "targets" / target / "candidate.py").read_text())
    who = [node.value.value for node in tree.body if isinstance(node, ast.Assign) and len(node.targets) == 1
           and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "WHO"
           and isinstance(node.value, ast.Constant)]
    assert who and who[0].strip(), f"targets/{target}/candidate.py declares no WHO"
