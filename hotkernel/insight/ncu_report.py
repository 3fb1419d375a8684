"""Nsight Compute's own readers: the ``ncu`` binary, NVIDIA's ``ncu_report`` module, ``ncu --import --csv``."""

from __future__ import annotations

import glob
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hotkernel._util.procs import find_executable, run_command
from hotkernel.errors import HotkernelError

NCU_IMPORT_TIMEOUT_S = 300.0


def ncu_python_dirs() -> list[Path]:
    """Where NVIDIA's ``ncu_report`` module lives: next to ncu (``extras/python``) and the usual installs."""
    dirs = []
    ncu = find_ncu()
    if ncu is not None:
        real = ncu.resolve()
        dirs += [real.parent / "extras" / "python", real.parent.parent / "extras" / "python"]
    dirs += [Path(p) for p in sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)]
    dirs += [Path(p) for p in sorted(glob.glob("/usr/local/cuda*/nsight-compute*/extras/python"), reverse=True)]
    return [d for d in dirs if (d / "ncu_report.py").is_file()]


def find_ncu() -> Path | None:
    return find_executable(
        "ncu",
        env_homes=("CUDA_HOME", "CUDA_PATH"),
        extra_dirs=("/usr/local/cuda/bin", *sorted(glob.glob("/opt/nvidia/nsight-compute/*"), reverse=True)),
    )


def load_ncu_report_module() -> Any | None:
    """NVIDIA's ``ncu_report`` (importable, or under an Nsight Compute install); None when unavailable."""
    try:
        import ncu_report  # type: ignore[import-not-found]

        return ncu_report
    except Exception:
        pass
    for directory in ncu_python_dirs():
        sys.path.insert(0, str(directory))
        try:
            import ncu_report  # type: ignore[import-not-found]

            return ncu_report
        except Exception:
            sys.path.remove(str(directory))
    return None


def ncu_import_csv(ncu: Path, path: Path, page: str = "details", who: str = "top") -> str:
    """A page (``details`` or ``raw``) of an ``.ncu-rep`` as CSV text, through ``ncu --import``."""
    with tempfile.TemporaryDirectory(prefix="hotkernel-ncu-import-") as scratch:
        proc = run_command(
            [str(ncu), "--import", str(path), "--csv", "--page", page],
            timeout_s=NCU_IMPORT_TIMEOUT_S,
            name="ncu-import",
            out_dir=scratch,
        )
        if not proc.ok:
            last = (proc.output(1000).strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise HotkernelError(
                f"{who}: `ncu --import {path}` failed: {last}; is it an .ncu-rep from this ncu version?"
            )
        return proc.stdout()


def launches_from_ncu_report(module: Any, path: Path, metric_names: list[str]) -> list[dict[str, Any]]:
    """Walk ranges and actions of a report with NVIDIA's module, reading the metrics hotkernel shows."""
    context = module.load_report(str(path))
    launches = []
    for r in range(context.num_ranges()):
        report_range = context.range_by_idx(r)
        for a in range(report_range.num_actions()):
            action = report_range.action_by_idx(a)
            metrics = {}
            for name in metric_names:
                metric = action.metric_by_name(name)
                if metric is not None:
                    metrics[name] = (str(metric.as_double()), metric.unit() or "")
            launches.append(
                {
                    "id": f"{r}.{a}",
                    "name": action.name(),
                    "block": None,
                    "grid": None,
                    "metrics": metrics,
                    "rules": [],
                }
            )
    return launches


def read_ncu_rep(
    path: Path,
    metric_names: list[str],
    from_csv: Callable[[str], list[dict[str, Any]]],
    who: str,
    page: str = "raw",
) -> list[dict[str, Any]]:
    """Launches of an ``.ncu-rep``: NVIDIA's module reads ``metric_names``; else ``ncu --import --page PAGE``,
    parsed by ``from_csv``. Neither available: an error that says how to export a CSV."""
    module = load_ncu_report_module()
    module_error = "ncu_report module not found"
    if module is not None:
        try:
            return launches_from_ncu_report(module, path, metric_names)
        except Exception as exc:  # a report from a newer ncu, a broken file: try the CLI next
            module_error = f"{type(exc).__name__}: {exc}"
    ncu = find_ncu()
    if ncu is None:
        raise HotkernelError(
            f"{who}: reading {path} needs Nsight Compute ({module_error}; ncu not on PATH); on a machine with ncu "
            f"run `ncu --import {path} --csv --page {page} > report.csv` and pass the CSV"
        )
    return from_csv(ncu_import_csv(ncu, path, page=page, who=who))
