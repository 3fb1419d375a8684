"""The MCP record tool keeps a verify from the run store by its run_id (or latest), never JSON from the client,
and refuses a forged verdict; history reports awaiting confirmation, confirmed and imported records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from store.record_factory import make_workspace, synthetic_result

from hotkernel.mcp.app import build_server
from hotkernel.run.runstore import result_digest, save_run
from hotkernel.store.record import record as store_record

pytestmark = pytest.mark.anyio
META = {"note": "n", "who": "pytest"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _forge(path: Path, *, digest: bool) -> None:
    """Edit a stored inconclusive run into faster 50x; with ``digest`` the digest is rewritten to match."""
    body = json.loads(path.read_text())
    body["result"].update(verdict="faster", speedup=50.0, interval=[40.0, 60.0])
    if digest:
        from hotkernel.run.models import VerifyResult

        body["digest"] = result_digest(VerifyResult.model_validate(body["result"]))
    path.write_text(json.dumps(body))


async def test_record_takes_a_stored_run_by_id_or_latest_and_once(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    first = save_run(ws, synthetic_result("gemv", "slower", 0.8))
    second = save_run(ws, synthetic_result("gemv", "faster", 1.5))
    async with Client(build_server(ws.root)) as client:
        by_id = await client.call_tool("record", {"target": "gemv", "run_id": first.run_id, **META})
        assert not by_id.is_error and by_id.structured_content["verdict"] == "slower"
        assert json.loads((ws.root / by_id.structured_content["path"]).read_text())["run_id"] == first.run_id
        again = await client.call_tool("record", {"target": "gemv", "run_id": first.run_id, **META})
        assert again.is_error and "already recorded" in text_of(again)
        newest = await client.call_tool("record", {"target": "gemv", "latest": True, **META})
        assert not newest.is_error and newest.structured_content["verdict"] == "faster"
        assert newest.structured_content["awaiting_confirmation"] is True
        both = await client.call_tool("record", {"target": "gemv", "latest": True, "run_id": second.run_id, **META})
        assert both.is_error and "pass one run id or latest" in text_of(both)
        bad = await client.call_tool("record", {"target": "gemv", "run_id": "../../hotkernel.lock", **META})
        assert bad.is_error
        typed = await client.call_tool("record", {"target": "gemv", "result": second.model_dump(mode="json"), **META})
        assert typed.is_error  # no parameter takes a result: without a run id or latest nothing is recorded
    assert len(list((ws.results_dir / "gemv").glob("*.json"))) == 2


@pytest.mark.parametrize("digest", [False, True], ids=["digest_left", "digest_rewritten"])
async def test_a_forged_verdict_in_the_run_store_is_refused(tmp_path: Path, digest: bool) -> None:
    ws = make_workspace(tmp_path)
    honest = save_run(ws, synthetic_result("rmsnorm", "inconclusive"))
    _forge(ws.state_dir / "runs" / f"{honest.run_id}.json", digest=digest)
    async with Client(build_server(ws.root)) as client:
        forged = await client.call_tool("record", {"target": "rmsnorm", "run_id": honest.run_id, **META})
    assert forged.is_error
    why = "edited after the run" if not digest else "not what its runs measured"
    assert why in text_of(forged) and len(text_of(forged).splitlines()) == 1
    assert not ws.results_dir.exists() or not list(ws.results_dir.rglob("*.json"))


async def test_history_reports_awaiting_confirmed_and_imported(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    first, second = (save_run(ws, synthetic_result("softmax", "faster", 1.4)) for _ in range(2))
    imported = store_record(ws, "softmax", synthetic_result("softmax", "slower", 0.9), imported=True, **META)
    async with Client(build_server(ws.root)) as client:
        one = await client.call_tool("record", {"target": "softmax", "run_id": first.run_id, **META})
        waiting = (await client.call_tool("history", {"target": "softmax"})).structured_content
        assert waiting["awaiting_confirmation"] == [one.structured_content["path"]]
        assert waiting["imported"] == [imported.path]
        two = await client.call_tool(
            "record",
            {"target": "softmax", "run_id": second.run_id, "confirms": one.structured_content["path"], **META},
        )
        assert not two.is_error and two.structured_content["confirmed"] is True
        history = (await client.call_tool("history", {"target": "softmax"})).structured_content
        board = (await client.call_tool("leaderboard", {})).structured_content
    assert history["awaiting_confirmation"] == []
    kept = {r["path"]: r for r in history["records"]}
    assert kept[two.structured_content["path"]]["confirms"] == one.structured_content["path"]
    assert all(kept[r["path"]]["confirmed"] for r in (one.structured_content, two.structured_content))
    assert kept[imported.path]["imported"] is True and kept[imported.path]["run_id"] is None
    (entry,) = [e for e in board["best"] if e["target"] == "softmax"]
    assert entry["best"]["confirmed"] and entry["same_files_runs"] == 2


async def test_list_targets_and_sync_show_the_boards_median_not_the_maximum(tmp_path: Path, capsys) -> None:
    """Three counted faster runs of the same files at 1.30x, 1.30x and 1.60x: the headline is 1.30x (what reruns
    give), in list_targets, in the sync report and in its printed summary; the lone 1.60x awaits a second verify
    and widens the range of the runs, never the headline."""
    from hotkernel.cli.commands.sync import print_report
    from hotkernel.reconcile.sync import sync

    ws = make_workspace(tmp_path)
    for speedup in (1.30, 1.30, 1.60):
        store_record(ws, "gemv", synthetic_result("gemv", "faster", speedup, candidate="same files"), **META)
    async with Client(build_server(ws.root)) as client:
        listed = (await client.call_tool("list_targets", {})).structured_content
    (gemv,) = [t for t in listed["targets"] if t["name"] == "gemv"]
    assert gemv["best_speedup"] == pytest.approx(1.30, rel=1e-3)
    report = sync(ws, check=True)
    (entry,) = report.headline
    assert entry.target == "gemv" and entry.same_files_runs == 3 and entry.median == pytest.approx(1.30, rel=1e-3)
    print_report(report, [])
    out = capsys.readouterr().out
    line = "  gemv: 1.300x on Synthetic Test Device, the median of 3 runs of its files (1.300-1.600x; results/gemv/"
    assert line in out, out
