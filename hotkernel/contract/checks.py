"""THE checks table: every check a run can fail, the phase that runs it, the verdict it causes, its function.

The judge loops over the ``output`` and ``shape`` rows for every judged output; the worker over the ``worker``
rows after every shape; process-level rows (``orchestrator``, ``tool``) are raised where the event is seen.
A new defence is one row here (plus its function) and one adversarial case in ``tests/adversarial/cases.py``.
Every non-ok run carries ``reason = "<check name>: <detail>"`` of the first row that failed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from .inputs import as_outputs, checksum
from .knobs import (
    CHECKSUM_REL_TOL,
    DEVICE_HEADROOM_BYTES,
    FLOOR_SAFETY,
    HOST_HEADROOM_BYTES,
    MIN_ROTATION,
    OUTPUT_COPIES_EXTRA,
    OUTPUT_COPIES_PER_SET,
    WALL_SLACK_FACTOR,
    WALL_SLACK_MS,
)


class Check(NamedTuple):
    name: str
    phase: str  # tool | orchestrator | worker | output | shape | judge
    verdict: str  # what failing it makes the run: "incorrect" or "invalid"
    function: Callable[..., Any] | None  # None: raised by its phase where the event is seen
    what: str


class OutputCase:
    """One judged output: what the kernel returned, the inputs it saw, and how to get the reference."""

    def __init__(
        self,
        torch: Any,
        outs: list[Any],
        inputs: list[Any],
        expected: list[tuple[tuple[int, ...], str]],
        item: dict[str, Any],
        kind: str,
        reference: Callable[[], list[Any]],
        tol: dict[str, Any],
        compare: Callable[..., list[dict[str, Any]]],
        set_baseline_error: Callable[[], list[list[float]]] | None = None,
    ) -> None:
        self.torch, self.outs, self.inputs, self.expected = torch, outs, inputs, expected
        self.item, self.kind, self.reference, self.tol, self.compare = item, kind, reference, tol, compare
        self.set_baseline_error = set_baseline_error  # the baseline's own error on this set (computed on demand)


def check_inputs_unchanged(case: OutputCase) -> list[dict[str, Any]]:
    """The checksums the worker took of the set after the calls equal those of the regenerated set."""
    if "checksums" not in case.item:
        return []
    now = [checksum(case.torch, t) for t in case.inputs]
    same = all(
        math.isclose(a, b, rel_tol=CHECKSUM_REL_TOL, abs_tol=1e-6)
        for pair_a, pair_b in zip(now, case.item["checksums"], strict=False)
        for a, b in zip(pair_a, pair_b, strict=False)
    ) and len(now) == len(case.item["checksums"])
    return [check_result("inputs_unchanged", same, "the kernel modified its inputs in place")]


def check_output_structure(case: OutputCase) -> list[dict[str, Any]]:
    """The baseline's count and dtypes, and each output's shape as this set's own reference has it (the same as
    the baseline's on the first set, except where an output's size follows the data, as in a compaction)."""
    outs, expected = case.outs, case.expected
    if len(outs) != len(expected):
        return [check_result("output_shape_dtype", False, f"{len(outs)} outputs, the baseline returns {len(expected)}")]
    references = case.reference()  # computed once: the value checks after this one use it too
    for index, (t, (shape, dtype)) in enumerate(zip(outs, expected, strict=False)):
        want = tuple(references[index].shape) if index < len(references) else shape
        if tuple(t.shape) != want or str(t.dtype) != dtype:
            return [
                check_result(
                    "output_shape_dtype",
                    False,
                    f"output {index} is {tuple(t.shape)} {t.dtype}, the baseline returns {want} {dtype}",
                )
            ]
    return [check_result("output_shape_dtype", True, "")]


def check_output_finite(case: OutputCase) -> list[dict[str, Any]]:
    torch = case.torch
    finite = all(bool(torch.isfinite(t).all()) for t in case.outs if t.is_floating_point())
    return [check_result("output_not_nan", finite, "output contains NaN or inf")]


# bounds that admit the baseline's own error (elementwise: as a floor of the tolerance, ``correctness_floor``)
BASELINE_ADMITTED = ("outputs_match_reference", "relative_error_norm", "output_carries_signal")


def check_output_values(case: OutputCase) -> list[dict[str, Any]]:
    """Elementwise and scale-free comparison against the reference (timed outputs: under their own name). The
    bounds admit the baseline's own error, measured on the first set; where one fails, they are judged again
    with the baseline's error on this very set (a sum with more cancellation here has a larger relative
    error, the baseline's included)."""
    found = case.compare(case.torch, case.outs, case.reference(), case.tol)
    if case.set_baseline_error is not None and any(
        not item["ok"] and item["name"] in BASELINE_ADMITTED for item in found
    ):
        found = case.compare(
            case.torch, case.outs, case.reference(), {**case.tol, "baseline": case.set_baseline_error()}
        )
    if case.kind != "timed":
        return found
    renamed = []
    for item in found:
        if item["ok"]:
            renamed.append(item)
        else:
            renamed.append(
                {**item, "name": "timed_outputs_match_reference", "detail": f"{item['name']}: {item['detail']}"}
            )
    return renamed


def check_result(name: str, ok: bool, detail: str, max_abs_error: float | None = None) -> dict[str, Any]:
    return {"name": name, "ok": bool(ok), "detail": "" if ok else detail, "max_abs_error": max_abs_error}


def check_floor(
    ms: float, floor_bytes: int | None, ceiling_gbps: float | None, device_kind: str
) -> tuple[float | None, str | None]:
    """(floor ms, problem): a time below moving ``floor_bytes`` at the copy ceiling x the safety factor."""
    if not floor_bytes or not ceiling_gbps:
        return None, None
    floor_ms = floor_bytes / (ceiling_gbps * 1e6) / FLOOR_SAFETY[device_kind]
    if ms < floor_ms:
        return floor_ms, (
            f"{ms:.6f} ms moves {floor_bytes} bytes faster than {ceiling_gbps:.1f} GB/s x "
            f"{FLOOR_SAFETY[device_kind]} allows ({floor_ms:.6f} ms)"
        )
    return floor_ms, None


def check_wall_clock(timing: dict[str, Any]) -> str | None:
    """Event time must explain the wall clock (catches unjoined streams, patched or lying timers)."""
    events, enqueue, wall_ms = timing["event_total_ms"], timing["enqueue_total_ms"], timing["wall_total_ms"]
    if wall_ms > WALL_SLACK_FACTOR * max(events, enqueue) + WALL_SLACK_MS * timing["samples"]:
        return (
            f"wall clock {wall_ms:.3f} ms for timed loops the timer put at {events:.3f} ms "
            f"(enqueue {enqueue:.3f} ms): work ran outside the timed region"
        )
    if events > 1.05 * wall_ms + 1.0:
        return f"timer reported {events:.3f} ms for loops that took {wall_ms:.3f} ms of wall clock"
    return None


def footprint_bytes(rotated: int, shared: int, output: int, n_sets: int) -> int:
    """Device (or host, for cpu targets) bytes a run needs with K = ``n_sets``: the worker's sets, kept
    outputs and its poison blocks, plus the judge's regenerated set, wide reference and comparison."""
    worker = n_sets * rotated + shared + (OUTPUT_COPIES_PER_SET * n_sets + OUTPUT_COPIES_EXTRA + 1) * output
    judge = 3 * (rotated + shared) + 3 * output
    return worker + judge


def fit_rotation(
    rotated: int, shared: int, output: int, wanted: int, free: int | None, device_kind: str
) -> tuple[int, str | None]:
    """The largest K <= ``wanted`` that fits ``free`` bytes, or (0, the refusal with the numbers)."""
    if free is None:
        return wanted, None
    headroom = DEVICE_HEADROOM_BYTES if device_kind == "cuda" else HOST_HEADROOM_BYTES
    k = wanted
    while k > MIN_ROTATION and footprint_bytes(rotated, shared, output, k) + headroom > free:
        k -= 1
    needed = footprint_bytes(rotated, shared, output, k) + headroom
    if needed > free:
        where = "device" if device_kind == "cuda" else "host"
        return 0, (
            f"the run needs {needed / 2**30:.2f} GiB of {where} memory ({MIN_ROTATION} input sets of "
            f"{rotated / 2**30:.2f} GiB, outputs of {output / 2**30:.2f} GiB, the judge's copies, "
            f"{headroom / 2**30:.0f} GiB headroom) and {free / 2**30:.2f} GiB are free: use a smaller "
            "shape or free the memory"
        )
    return k, None


CHECKS: tuple[Check, ...] = (
    Check("contract_unchanged", "tool", "invalid", None, "targets/hk_contract.py is hotkernel's contract"),
    Check("baseline_unchanged", "tool", "invalid", None, "baseline.py and the target's sources are as rendered"),
    Check(
        "workspace_unchanged",
        "tool",
        "invalid",
        None,
        "the manifest, the lock, results/, rendered files and .hotkernel/ did not change during the run",
    ),
    Check("device_idle", "tool", "invalid", None, "no other process uses the GPU"),
    Check("timeout", "orchestrator", "invalid", None, "the worker reported within the run's timeout"),
    Check(
        "single_protocol_line",
        "orchestrator",
        "invalid",
        None,
        "exactly one protocol line with this run's nonce on the private fd; no JSON printed on stdout",
    ),
    Check("worker_exit_clean", "orchestrator", "invalid", None, "the worker did not exit non-zero after reporting"),
    Check(
        "no_leftover_processes",
        "orchestrator",
        "invalid",
        None,
        "no process of the run (same group, run token, or an orphan reparented to the orchestrator) survives",
    ),
    Check("crashed", "orchestrator", "invalid", None, "worker and judge did not die or raise"),
    Check("device_available", "worker", "invalid", None, "the target's device exists"),
    Check(
        "previous_run_exited",
        "worker",
        "invalid",
        None,
        "the previous run's killed processes had exited before this run's timer started",
    ),
    Check("fits_memory", "worker", "invalid", fit_rotation, "the run fits the card's (host's) free memory"),
    Check("import_failed", "worker", "invalid", None, "the script imports and has `kernel`"),
    Check(
        "functions_unpatched",
        "worker",
        "invalid",
        None,
        "timer, comparison, RNG and the contract's own functions are the objects saved before the import",
    ),
    Check(
        "output_plain_tensor",
        "worker",
        "invalid",
        as_outputs,
        "every output is a plain torch.Tensor: not a subclass (which decides what every operation on it, the "
        "checks' own included, returns) and not another object",
    ),
    Check(
        "timer_consistent_with_wall_clock",
        "worker",
        "invalid",
        check_wall_clock,
        "the timer's event time explains the wall clock",
    ),
    Check("inputs_unchanged", "output", "incorrect", check_inputs_unchanged, "the kernel left its inputs alone"),
    Check(
        "output_shape_dtype",
        "output",
        "incorrect",
        check_output_structure,
        "outputs have the baseline's count, shapes and dtypes",
    ),
    Check("output_not_nan", "output", "incorrect", check_output_finite, "no NaN or inf in floating outputs"),
    Check(
        "outputs_match_reference",
        "output",
        "incorrect",
        check_output_values,
        "correctness-pass outputs match the reference (elementwise and scale-free checks)",
    ),
    Check("relative_error_norm", "output", "incorrect", None, "from correctness.check_outputs"),
    Check("output_carries_signal", "output", "incorrect", None, "from correctness.check_outputs"),
    Check(
        "timed_outputs_match_reference",
        "output",
        "incorrect",
        None,
        "outputs of checked timed calls (perturbed inputs) match the reference",
    ),
    Check("faster_than_floor", "shape", "invalid", check_floor, "no faster than the copy ceiling allows"),
    Check(
        "reference_deterministic",
        "judge",
        "invalid",
        None,
        "the reference gives the same outputs under two RNG seeds (a Model with dropout in training mode does "
        "not: its output is noise, which cannot be judged)",
    ),
    Check(
        "outputs_stable_during_judging",
        "judge",
        "invalid",
        None,
        "handed-over buffers did not change while the judge read them",
    ),
    Check(
        "output_tolerances_fit_outputs",
        "judge",
        "invalid",
        None,
        "the manifest's output_tolerances list no more entries than the baseline returns outputs",
    ),
)
CHECK_NAMES = tuple(check.name for check in CHECKS)
OUTPUT_CHECKS = tuple(check for check in CHECKS if check.phase == "output" and check.function is not None)


def verdict_of(name: str) -> str:
    """The status a failed check gives a run (checks not in the table are invalid)."""
    for check in CHECKS:
        if check.name == name:
            return check.verdict
    return "invalid"
