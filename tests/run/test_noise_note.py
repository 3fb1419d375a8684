"""An inconclusive verify that was far from deciding says so: its interval against the margin, each side's
run-to-run spread and what narrows it (``VerifyResult.noisy``); a decided or nearly decided one says nothing."""

from __future__ import annotations

from types import SimpleNamespace

from hotkernel.cli.commands.sync import item_detail
from hotkernel.cli.commands.verify import print_verify
from hotkernel.reconcile.models import recorded_item
from hotkernel.run.bench import sample_stats
from hotkernel.run.models import SideSummary, VerifyResult
from hotkernel.run.verdict import decide
from hotkernel.run.verify import noise_note

# per-run medians (ms) of an A/A on a loaded 2-CPU box: two levels, 0.36 and 0.62 ms, as runs fell
NOISY_B = [0.359, 0.55, 0.555, 0.684, 0.571, 0.5, 0.575]
NOISY_C = [0.705, 0.572, 0.496, 0.505, 0.662, 0.681, 0.639]
QUIET_B = [1.000, 1.001, 0.999, 1.000, 1.002, 0.998, 1.001]
QUIET_C = [1.001, 1.000, 1.000, 0.999, 1.001, 1.000, 1.002]


def side(name: str, times: list[float]) -> SideSummary:
    return SideSummary(script=f"targets/t/{name}.py", stats=sample_stats(times))


def note(baseline: list[float], candidate: list[float], device_kind: str = "cpu") -> str | None:
    decision = decide(baseline, candidate, alpha=0.01, epsilon=0.01)
    return noise_note(decision, side("baseline", baseline), side("candidate", candidate), device_kind)


def test_a_noisy_inconclusive_verify_says_why_with_the_spread_and_the_fix() -> None:
    said = note(NOISY_B, NOISY_C)
    assert said is not None
    assert said.startswith("too noisy here to decide at the 1% margin: the interval [")
    assert "x the margin's 2%" in said and "% (baseline) and " in said and "% (candidate) from run to run" in said
    assert "fewer `threads`" in said
    assert "nothing else on the GPU" in (note(NOISY_B, NOISY_C, "cuda") or "")


def test_quiet_decided_or_nearly_decided_verifies_say_nothing() -> None:
    assert note(QUIET_B, QUIET_C) is None  # within the margin
    assert note(NOISY_B, [t / 3 for t in NOISY_B]) is None  # faster: decided despite the spread
    slightly = [t * 1.01 for t in QUIET_B]  # overlaps the margin, but the interval is not 10x its width
    assert note(QUIET_B, slightly) is None


def noisy_result() -> VerifyResult:
    """The VerifyResult of the noisy A/A above, as verify builds it."""
    decision = decide(NOISY_B, NOISY_C, alpha=0.01, epsilon=0.01)
    return VerifyResult(
        verdict="inconclusive",
        reason=f"{decision.reason}: {decision.summary()}",
        n=7,
        rounds_completed=7,
        baseline=side("baseline", NOISY_B),
        candidate=side("candidate", NOISY_C),
        noisy=noise_note(decision, side("baseline", NOISY_B), side("candidate", NOISY_C), "cpu"),
    )


def test_the_cli_prints_the_note_under_the_verdict(capsys) -> None:  # type: ignore[no-untyped-def]
    result = noisy_result()
    print_verify(result)
    assert "too noisy here to decide" in " ".join(capsys.readouterr().err.split())  # the console is stderr


def test_a_sync_item_carries_the_note_and_the_sync_line_shows_it() -> None:
    result = noisy_result()
    item = recorded_item("cpu_t", result, "results/cpu_t/x.json", None)
    assert item.noisy == result.noisy and result.noisy
    line = item_detail(item, SimpleNamespace(latest={}))  # a recorded item reads nothing of the report
    assert line.startswith(": inconclusive (results/cpu_t/x.json); ") and line.endswith(result.noisy)
