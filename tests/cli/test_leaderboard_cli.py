"""``hotkernel leaderboard --summary`` / ``--check`` and the MCP leaderboard tool, on synthetic records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from store.record_factory import leaderboard_cli, make_workspace, synthetic_result

from hotkernel.mcp.app import build_server
from hotkernel.run.models import VerifyResult
from hotkernel.store.models import Provenance
from hotkernel.store.record import record
from hotkernel.workspace.paths import Workspace

H200 = "NVIDIA H200"
TARGETS = ("kb1_001_relu", "kb1_002_gelu", "rmsnorm")


def _result(target: str, verdict: str, speedup: float | None) -> VerifyResult:
    """A synthetic verify whose numbers recompute from its samples, on a named card, with flops/bytes and a
    judge ceiling for the chart."""
    result = synthetic_result(target, verdict, speedup, device=H200)
    runs = [
        run.model_copy(update={"data": {"ceiling_gbps": 4200.0}}) if (run.role, run.index) == ("baseline", 0) else run
        for run in result.runs
    ]
    contract = {"flops": 1e8, "bytes": 1e8, "dtype": "bf16"}
    return result.model_copy(update={"device_kind": "cuda", "contract": contract, "runs": runs})


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = make_workspace(tmp_path / "ws", TARGETS)
    prov = Provenance(device=H200, device_kind="cuda", cpu="test cpu", hotkernel="0.0.test")
    for target, verdict, speedup, competitor in (
        ("kb1_001_relu", "faster", 2.5, None),
        ("kb1_001_relu", "faster", 2.5, None),  # a faster best counts once a second verify of its files confirms it
        ("kb1_002_gelu", "slower", 0.9, None),
        ("rmsnorm", "faster", 1.2, None),
        ("rmsnorm", "faster", 1.2, None),
        ("rmsnorm", "faster", 1.5, "compile"),
    ):
        record(
            ws,
            target,
            _result(target, verdict, speedup),
            note="synthetic",
            who="test",
            provenance=prov,
            competitor=competitor,
        )
    return ws


def test_summary_prints_fast_p_per_suite_and_writes_nothing(ws: Workspace) -> None:
    before = ws.leaderboard.read_bytes()
    done = leaderboard_cli(ws.root, "--summary")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "suite",
        "device",
        "targets",
        "fast_0",
        "fast_1.0",
        "fast_1.5",
        "fast_2.0",
        "geomean",
        "(faster",
        "only)",
    ]
    level1 = next(line for line in lines if line.startswith("kernelbench level 1"))
    assert level1.split()[3:] == ["NVIDIA", "H200", "2", "0.500", "0.500", "0.500", "0.500", "2.500x", "(1)"]
    own = next(line for line in lines if line.startswith("workspace"))
    assert own.split()[-6:] == ["1.000", "1.000", "0.000", "0.000", "1.200x", "(1)"]  # the competitor is not kept
    data = json.loads(leaderboard_cli(ws.root, "--summary", "--json").stdout)
    assert [s["suite"] for s in data["suites"]] == ["kernelbench level 1", "workspace"]
    assert ws.leaderboard.read_bytes() == before


def test_check_names_a_stale_chart_and_leaderboard_fixes_it(ws: Workspace) -> None:
    chart = ws.root / "roofline_nvidia_h200.svg"
    assert leaderboard_cli(ws.root, "--check").returncode == 0
    chart.write_text(chart.read_text().replace("rmsnorm", "rmsnorn"))
    done = leaderboard_cli(ws.root, "--check")
    assert done.returncode == 1
    assert "roofline_nvidia_h200.svg is stale: it differs from results/: run `hotkernel leaderboard`" in done.stderr
    assert leaderboard_cli(ws.root).returncode == 0 and leaderboard_cli(ws.root, "--check").returncode == 0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_leaderboard_returns_competitor_columns_and_the_summary(ws: Workspace) -> None:
    async with Client(build_server(ws.root)) as client:
        board = await client.call_tool("leaderboard", {})
    assert not board.is_error
    data = board.structured_content
    assert {r["role"] for r in data["rows"]} == {"candidate", "competitor"}
    entry = next(e for e in data["best"] if e["target"] == "rmsnorm")
    assert entry["competitor"]["competitor"] == "compile" and entry["vs_competitor"] == pytest.approx(0.8)
    assert {s["suite"] for s in data["summary"]} == {"kernelbench level 1", "workspace"}
