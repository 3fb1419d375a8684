"""The MCP server through the SDK's in-process client: every tool, bad input, path escapes, progress, cancel.

A small CPU workspace (device: cpu, fp32) stands in for a GPU one; the venv's python (torch CPU) is the user's
interpreter. Tools that need a GPU must fail with a clear tool error here, and that is asserted.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from hotkernel.mcp import jobs
from hotkernel.mcp.app import build_server

pytestmark = pytest.mark.anyio
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the user's python needs torch")

MANIFEST = """\
# a comment that edits must keep
version: 1
defaults:
  device: cpu
  n: 2
targets:
  scale:
    from: ./kernels/scale.py:scale
    shapes: ["64x64"]
    dtype: fp32
"""
KERNEL = "def scale(x):\n    return x * 2.0\n"
HANG_GUARD_S = 300  # only guards against a hang: a job's `import torch` can take a minute on a loaded machine
SLEEPER = """\
import os, pathlib, sys, time
pathlib.Path(sys.argv[1] + ".part").write_text(str(os.getpid()))
os.replace(sys.argv[1] + ".part", sys.argv[1])  # whole when it appears
time.sleep(600)
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    (root / "kernels").mkdir(parents=True)
    (root / "hotkernel.yaml").write_text(MANIFEST)
    (root / "kernels" / "scale.py").write_text(KERNEL)
    (root / "tools").mkdir()
    (root / "tools" / "sleeper.py").write_text(SLEEPER)
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    return root


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under root (the state a refused call must leave unchanged)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".hotkernel" not in p.parts
    }


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def call(client: Client, name: str, args: dict | None = None, **kwargs):
    return await client.call_tool(name, args or {}, **kwargs)


async def test_tools_listed(workspace: Path) -> None:
    """The README lists exactly the server's tools (between its hotkernel:mcp-tools markers)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- hotkernel:mcp-tools", 1)[1].split("<!-- hotkernel:mcp-tools:end -->", 1)[0]
    listed = re.findall(r"`([a-z_]+)`", block.split("-->", 1)[1])
    async with Client(build_server(workspace)) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert len(names) == len(set(names)) and len(listed) == len(set(listed))
    extra, missing = sorted(set(listed) - set(names)), sorted(set(names) - set(listed))
    assert not extra and not missing, f"README.md lists {extra} the server lacks and misses {missing}"
    assert {"verify", "sync", "profile_diff", "import_suite", "job_status"} <= set(names)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    table = docs.split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])
    }
    assert documented == set(names), f"docs/mcp.md's tools table: {sorted(set(names) ^ documented)}"


async def test_list_and_show_target(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        listed = await call(client, "list_targets")
        assert not listed.is_error, text_of(listed)
        data = listed.structured_content
        assert data["workspace"] == str(workspace.resolve())
        assert [t["name"] for t in data["targets"]] == ["scale"]
        assert data["targets"][0]["device"] == "cpu" and data["targets"][0]["dtype"] == "fp32"
        shown = await call(client, "show_target", {"target": "scale"})
        assert not shown.is_error, text_of(shown)
        assert shown.structured_content["spec"]["from"] == "./kernels/scale.py:scale"
        assert shown.structured_content["history"] == []


async def test_unknown_target_lists_known_ones(workspace: Path) -> None:
    before = snapshot(workspace)
    async with Client(build_server(workspace)) as client:
        for tool, args in [
            ("show_target", {"target": "nope"}),
            ("history", {"target": "nope"}),
            ("bench", {"target": "nope"}),
            ("verify", {"target": "nope"}),
            ("update_target", {"name": "nope", "dtype": "bf16"}),
            ("remove_target", {"name": "nope"}),
            ("sync", {"targets": ["scale", "nope"]}),
        ]:
            result = await call(client, tool, args)
            assert result.is_error, tool
            text = text_of(result)
            assert "'nope'" in text and "scale" in text, (tool, text)
            assert "internal error" not in text
    assert snapshot(workspace) == before


async def test_bad_input_names_the_parameter(workspace: Path) -> None:
    before = snapshot(workspace)
    async with Client(build_server(workspace)) as client:
        cases = [
            ("bench", {"target": "scale", "n": "many"}, "n"),
            ("bench", {"target": "scale", "n": 0}, "n"),
            ("verify", {"target": "scale", "n": 10_000}, "n"),
            ("verify", {}, "target"),
            ("show_target", {"target": "../etc"}, "target"),
            ("add_target", {"name": "x y", "source": "./kernels/scale.py:scale", "shapes": ["8"]}, "name"),
            ("add_target", {"name": "fresh", "source": "./kernels/scale.py:scale"}, "shapes"),
            ("roofline", {"flops": -1, "bytes_moved": 10}, "flops"),
            ("record", {"target": "scale", "note": "x"}, "who"),
            ("job_status", {"job_id": "verify-0000000000", "wait_s": 0}, "job_id"),
            ("invalidate_record", {"path": "results/scale/x.json"}, "reason"),
        ]
        for tool, args, param in cases:
            result = await call(client, tool, args)
            assert result.is_error, (tool, args)
            text = text_of(result)
            assert param in text, (tool, text)
            assert text.strip() != f"Error executing tool {tool}", (tool, text)
            assert "internal error" not in text, (tool, text)
    assert snapshot(workspace) == before


async def test_a_function_the_target_cannot_call_is_refused_with_the_fix(workspace: Path) -> None:
    """add_target for a function of two tensors given one shape: one line naming the missing parameter and the
    fixes, nothing written (the target's baseline would have crashed at its first run)."""
    (workspace / "kernels" / "two.py").write_text("def add(x, y):\n    return x + y\n", encoding="utf-8")
    before = snapshot(workspace)
    async with Client(build_server(workspace)) as client:
        result = await call(client, "add_target", {"name": "two", "source": "./kernels/two.py:add", "shapes": ["8"]})
        text = text_of(result)
        assert result.is_error and "needs y" in text and "extra" in text and "kwargs" in text, text
        assert snapshot(workspace) == before  # refused before anything was written
        added = await call(
            client, "add_target", {"name": "two", "source": "./kernels/two.py:add", "shapes": ["8"], "extra": ["y:8"]}
        )
        assert not added.is_error, text_of(added)
    assert snapshot(workspace) != before  # the second call wrote the target


async def test_path_escapes_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def f(x):\n    return x\n")
    (workspace / "tools" / "link.py").symlink_to(outside)
    before = snapshot(workspace)
    async with Client(build_server(workspace)) as client:
        cases = [
            ("bench", {"target": "scale", "script": "../outside.py"}),
            ("bench", {"target": "scale", "script": str(outside)}),
            ("verify", {"target": "scale", "candidate": "tools/link.py"}),
            ("torch_trace", {"script": "tools/../../outside.py"}),
            ("torch_trace", {"script": "tools/link.py"}),
            ("disasm", {"source": "/etc/passwd"}),
            ("invalidate_record", {"path": "../outside.py", "reason": "escape attempt"}),
            ("add_target", {"name": "evil", "source": "../outside.py:f", "shapes": ["8"]}),
            ("update_target", {"name": "scale", "source": "./tools/link.py:f"}),
            ("new_target", {"name": "evil", "source": str(outside) + ":f", "shapes": ["8"]}),
        ]
        for tool, args in cases:
            result = await call(client, tool, args)
            assert result.is_error, (tool, args)
            assert "outside the workspace" in text_of(result), (tool, text_of(result))
        result = await call(client, "invalidate_record", {"path": "hotkernel.yaml", "reason": "not a record"})
        assert result.is_error and "results/" in text_of(result)
    assert snapshot(workspace) == before
    assert not jobs.list_jobs() or all(j.args.get("script") != str(outside) for j in jobs.list_jobs())


async def test_gpu_tools_without_gpu(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        info = await call(client, "gpu_info")
        assert not info.is_error, text_of(info)
        if info.structured_content["gpus"]:
            pytest.skip("a GPU is present: the no-GPU errors are not reachable here")
        assert info.structured_content["source"] == "none" and info.structured_content["message"]
        roof = await call(client, "roofline", {"flops": 1e9, "bytes_moved": 1e8})
        assert roof.is_error and "no GPU" in text_of(roof) and "gpu" in text_of(roof)
        named = await call(client, "roofline", {"flops": 1e9, "bytes_moved": 1e8, "gpu": "H200"})
        assert not named.is_error, text_of(named)
        assert named.structured_content["bound"] == "memory"
        # wait_s past the probe's own limit: on a loaded machine `import torch` alone can outlast the default 50 s
        # wait, and the call would then hand back a running job rather than the probe's error
        cal = await call(client, "calibrate", {"device": "cuda", "timeout_s": 120, "wait_s": HANG_GUARD_S})
        assert cal.is_error, text_of(cal)
        assert "internal error" not in text_of(cal) and "calibrate" in text_of(cal)


async def test_record_needs_a_verify_from_this_server(workspace: Path) -> None:
    before = snapshot(workspace)
    async with Client(build_server(workspace)) as client:
        result = await call(client, "record", {"target": "scale", "note": "n/a", "who": "test"})
        assert result.is_error and "pass one run id or latest" in text_of(result)
        result = await call(client, "record", {"target": "scale", "note": "n/a", "who": "test", "latest": True})
        assert result.is_error and "no stored verify of target 'scale'" in text_of(result)
    assert snapshot(workspace) == before


async def test_leaderboard_and_history_empty(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        board = await call(client, "leaderboard")
        assert not board.is_error, text_of(board)
        assert board.structured_content["rows"] == []
        assert (workspace / "LEADERBOARD.md").read_text() == board.structured_content["markdown"]
        hist = await call(client, "history", {"target": "scale"})
        assert not hist.is_error
        assert hist.structured_content == {
            "target": "scale",
            "records": [],
            "awaiting_confirmation": [],
            "imported": [],
        }


async def test_no_workspace_says_how_to_start(tmp_path: Path) -> None:
    async with Client(build_server(tmp_path)) as client:
        result = await call(client, "list_targets")
        assert result.is_error and "new_target" in text_of(result)


@pytest.mark.slow  # the job runs the user python, which needs torch
async def test_start_then_poll_then_cancel_kills_the_tree(workspace: Path, tmp_path: Path) -> None:
    pid_file = workspace / "sleeper.pid"
    async with Client(build_server(workspace)) as client:
        started = await call(
            client, "torch_trace", {"script": "tools/sleeper.py", "script_args": [str(pid_file)], "wait_s": 0}
        )
        assert not started.is_error, text_of(started)
        job = started.structured_content["job"]
        assert job["state"] == "running" and started.structured_content["result"] is None
        deadline = time.monotonic() + HANG_GUARD_S  # the job imports torch before the script starts
        while not pid_file.exists() and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert pid_file.exists(), "the profiled script never started"
        sleeper = int(pid_file.read_text())
        assert alive(sleeper)
        polled = await call(client, "job_status", {"job_id": job["job_id"], "wait_s": 0.5})
        assert not polled.is_error and polled.structured_content["job"]["state"] == "running"
        tree = jobs.descendants(jobs.get_job(job["job_id"]).pid)
        assert sleeper in tree
        cancelled = await call(client, "cancel_job", {"job_id": job["job_id"]})
        assert not cancelled.is_error, text_of(cancelled)
        assert cancelled.structured_content["state"] == "cancelled"
        for pid in [jobs.get_job(job["job_id"]).pid, *tree]:
            assert not alive(pid), f"process {pid} survived cancel_job"
        listed = await call(client, "list_jobs")
        assert job["job_id"] in [j["job_id"] for j in listed.structured_content["jobs"]]


@pytest.mark.slow  # the job runs the user python, which needs torch
async def test_cancelled_call_kills_the_job_and_progress_arrives(workspace: Path) -> None:
    """A call the client cancels (timeout or notifications/cancelled) leaves no process of its job behind."""
    pid_file = workspace / "sleeper2.pid"
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(build_server(workspace)) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: client.call_tool(
                    "torch_trace",
                    {"script": "tools/sleeper.py", "script_args": [str(pid_file)], "wait_s": 600},
                    progress_callback=on_progress,
                )
            )
            deadline = time.monotonic() + HANG_GUARD_S
            while not pid_file.exists() and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            group.cancel_scope.cancel()
        assert pid_file.exists(), "the profiled script never started"
        sleeper = int(pid_file.read_text())
        deadline = time.monotonic() + 60  # the server kills the job once it sees the cancel: a hang guard
        while alive(sleeper) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
    assert not alive(sleeper), "the job's child outlived the cancelled call"
    job = [j for j in jobs.list_jobs() if j.args.get("script_args") == [str(pid_file)]][-1]
    assert job.state == "cancelled" and not alive(job.pid)
    assert seen and "started as job" in (seen[0][2] or "")
    assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)


@needs_torch
async def test_torch_trace_runs_on_cpu(workspace: Path) -> None:
    script = workspace / "tools" / "matmul.py"
    script.write_text(
        textwrap.dedent(
            """\
            import torch
            a = torch.randn(64, 64)
            for _ in range(3):
                a = a @ a / 64
            """
        )
    )
    async with Client(build_server(workspace)) as client:
        result = await call(client, "torch_trace", {"script": "tools/matmul.py", "top": 5, "wait_s": 300})
    assert not result.is_error, text_of(result)
    trace = result.structured_content["result"]
    assert result.structured_content["job"]["state"] == "done"
    assert trace["cuda"] is False and any("mm" in op["name"] for op in trace["ops"])
    assert Path(trace["files"]["table"]).resolve().is_relative_to(workspace.resolve())


async def test_disasm_without_cubin_is_a_clear_error(workspace: Path, tmp_path: Path, monkeypatch) -> None:
    (workspace / "tools" / "not_a_kernel.ptx").write_text("hello\n")
    empty_cache = tmp_path / "triton-cache"
    (empty_cache / "0123").mkdir(parents=True)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(empty_cache))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.triton/cache either
    async with Client(build_server(workspace)) as client:
        missing = await call(client, "disasm", {"source": "triton-cache"})  # no kernel: the newest, if any
        assert missing.is_error and "no kernel yet" in text_of(missing)
        bad = await call(client, "disasm", {"source": "tools/not_a_kernel.ptx"})
        assert bad.is_error and "PTX" in text_of(bad)


def test_cli_never_imports_the_sdk() -> None:
    import subprocess

    code = "import hotkernel.cli.app, sys; print([m for m in sys.modules if m.split('.')[0] == 'mcp'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_server_never_imports_torch() -> None:
    import subprocess

    code = (
        "import importlib, pkgutil, sys, hotkernel; from hotkernel.mcp.app import build_server; "
        "build_server('.'); "
        "[importlib.import_module(m.name) for m in pkgutil.walk_packages(hotkernel.__path__, 'hotkernel.') "
        "if '.scripts' not in m.name and m.name != 'hotkernel.__main__']; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ))
    assert out.stdout.strip() == "[]"


@needs_torch
async def test_full_loop_on_cpu(workspace: Path) -> None:
    """new_target, bench, verify, record, history, leaderboard, show_target, invalidate_record, plan."""
    (workspace / "kernels" / "double.py").write_text("def double(x):\n    return x + x\n")
    async with Client(build_server(workspace)) as client:
        made = await call(
            client,
            "new_target",
            {
                "name": "double",
                "source": "./kernels/double.py:double",
                "shapes": ["32x32"],
                "dtype": "fp32",
                "device": "cpu",
            },
        )
        assert not made.is_error, text_of(made)
        assert "targets/double/candidate.py" in made.structured_content["written"]
        manifest = (workspace / "hotkernel.yaml").read_text()
        assert manifest.startswith(MANIFEST), "the edit must keep the existing text byte for byte"
        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        bench = await client.call_tool(
            "bench", {"target": "double", "n": 2, "warmup": 0, "wait_s": 300}, progress_callback=on_progress
        )
        assert not bench.is_error, text_of(bench)
        result = bench.structured_content["result"]
        assert result["status"] == "ok" and result["stats"]["n"] == 2 and result["stats"]["median_ms"] > 0
        assert len(seen) >= 2 and seen == sorted(seen)
        verified = await call(client, "verify", {"target": "double", "n": 2, "wait_s": 300})
        assert not verified.is_error, text_of(verified)
        verdict = verified.structured_content["result"]["verdict"]
        assert verdict in ("faster", "slower", "inconclusive"), verified.structured_content["result"]["reason"]
        run_id = verified.structured_content["result"]["run_id"]
        wrong = await call(client, "record", {"target": "scale", "note": "x", "who": "t", "run_id": run_id})
        assert wrong.is_error and "not 'scale'" in text_of(wrong)
        recorded = await call(
            client, "record", {"target": "double", "note": "same kernel", "who": "pytest", "run_id": run_id}
        )
        assert not recorded.is_error, text_of(recorded)
        path = recorded.structured_content["path"]
        assert (workspace / path).is_file() and recorded.structured_content["verdict"] == verdict
        hist = await call(client, "history", {"target": "double"})
        assert [r["path"] for r in hist.structured_content["records"]] == [path]
        shown = await call(client, "show_target", {"target": "double"})
        assert shown.structured_content["history"][0]["path"] == path
        assert shown.structured_content["files"]["candidate"] == "targets/double/candidate.py"
        board = await call(client, "leaderboard")
        assert [row["path"] for row in board.structured_content["rows"]] == [path]
        gone = await call(client, "invalidate_record", {"path": path, "reason": "test of invalidation"})
        assert not gone.is_error, text_of(gone)
        assert gone.structured_content["invalidated"]["reason"] == "test of invalidation"
        assert (workspace / path).is_file()
        hist = await call(client, "history", {"target": "double"})
        assert hist.structured_content["records"][0]["counted"] is False
        planned = await call(client, "plan")
        assert not planned.is_error, text_of(planned)
        assert {i["name"] for i in planned.structured_content["items"]} >= {"scale"}


async def test_add_update_remove_target_minimal_diff(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        added = await call(
            client,
            "add_target",
            {
                "name": "twice",
                "source": "./kernels/scale.py:scale",
                "shapes": ["16x16", "8x8"],
                "dtype": "fp32",
                "kwargs": {},
                "fields": {"seed": 3},
            },
        )
        assert not added.is_error, text_of(added)
        assert added.structured_content["spec"]["seed"] == 3
        assert (workspace / "targets" / "twice" / "baseline.py").is_file()
        text = (workspace / "hotkernel.yaml").read_text()
        assert text.startswith(MANIFEST)
        dup = await call(client, "add_target", {"name": "twice", "source": "./kernels/scale.py:scale", "shapes": ["8"]})
        assert dup.is_error and "update_target" in text_of(dup)
        missing = await call(client, "add_target", {"name": "gone", "source": "./kernels/nope.py:f", "shapes": ["8"]})
        assert missing.is_error and "source:" in text_of(missing) and "hotkernel.yaml:" not in text_of(missing)
        assert (workspace / "hotkernel.yaml").read_text() == text
        candidate = workspace / "targets" / "twice" / "candidate.py"
        candidate.write_text(candidate.read_text() + "\n# my edit\n")
        changed = await call(client, "update_target", {"name": "twice", "shapes": ["32x32"]})
        assert not changed.is_error, text_of(changed)
        assert changed.structured_content["spec"]["shapes"] == ["32x32"]
        assert "targets/twice/candidate.py" in changed.structured_content["kept"]
        assert candidate.read_text().endswith("# my edit\n")
        before = snapshot(workspace)
        bad = await call(client, "update_target", {"name": "twice", "fields": {"no_such_key": 1}})
        assert bad.is_error and "no_such_key" in text_of(bad)
        assert snapshot(workspace) == before
        removed = await call(client, "remove_target", {"name": "twice"})
        assert not removed.is_error, text_of(removed)
        assert (workspace / "hotkernel.yaml").read_text() == MANIFEST


@needs_torch
async def test_sync_limited_to_one_target(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        synced = await call(client, "sync", {"targets": ["scale"], "wait_s": 600})
        assert not synced.is_error, text_of(synced)
        report = synced.structured_content["result"]
        assert [item["name"] for item in report["items"]] == ["scale"]
        assert report["items"][0]["status"] == "recorded", report
        assert (workspace / "hotkernel.lock").is_file()
        again = await call(client, "plan")
        assert "scale" in again.structured_content["up_to_date"]


@pytest.mark.slow  # the job runs the user python, which needs torch
async def test_profile_without_nsight_says_the_fix(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        neither = await call(client, "profile", {})
        assert neither.is_error and "target" in text_of(neither) and "script" in text_of(neither)
        result = await call(client, "profile", {"target": "scale", "wait_s": 120})
    from hotkernel.insight.ncu_report import find_ncu

    if find_ncu() is not None:
        pytest.skip("Nsight Compute is installed here")
    assert result.is_error, text_of(result)
    text = text_of(result)
    assert "ncu" in text and "fix:" in text and "trace" in text, text


async def test_top_kernels_reads_a_captured_ncu_csv(workspace: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures" / "h200" / "ncu_import_details_csv.out"
    (workspace / "reports").mkdir()
    (workspace / "reports" / "ncu.csv").write_bytes(fixture.read_bytes())
    async with Client(build_server(workspace)) as client:
        result = await call(client, "top_kernels", {"report": "reports/ncu.csv", "n": 3})
        assert not result.is_error, text_of(result)
        assert result.structured_content["rows"] and len(result.structured_content["rows"]) <= 3
        outside = await call(client, "top_kernels", {"report": str(fixture)})
        assert outside.is_error and "outside the workspace" in text_of(outside)
