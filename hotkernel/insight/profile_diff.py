"""Before/after: two ncu reports (or two commands profiled with ncu), kernel by kernel, and what moved most.

The insight tool and its terminal table; reading, matching and comparing the reports is ``kernel_diff``
(whose docstring gives the matching rules and what counts as moved).
"""

from __future__ import annotations

import shlex
import tempfile
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError, quote
from hotkernel.insight.base import CLI_ONLY, Cli, Hints, InsightContext
from hotkernel.insight.kernel_diff import (
    DEFAULT_TOP,
    EXTRA_METRICS,
    METRICS,
    MOVED_POINTS,
    MOVED_REL_PCT,
    KernelDiff,
    ProfileDiff,
    change_text,
    diff_reports,
    fmt,
)
from hotkernel.insight.profile import Params as ProfileParams
from hotkernel.insight.profile import ProfileResult, command_of, profile
from hotkernel.workspace.paths import MAX_PATH, TARGET_NAME_RE

# ---- output -----------------------------------------------------------------------------------------------


def summary_lines(result: ProfileDiff, *, name_width: int = 60) -> list[str]:
    """The table for a terminal: what moved most, then one block per kernel (``*``: moved)."""
    total = ""
    if result.total_ms_a is not None and result.total_ms_b is not None:
        rel = f" ({result.total_rel_pct:+.1f}%)" if result.total_rel_pct is not None else ""
        total = f"; kernel time {fmt(result.total_ms_a)} -> {fmt(result.total_ms_b)} ms{rel}"
    lines = [
        f"A {result.a} ({result.kind_a}, {result.launches_a} launches)",
        f"B {result.b} ({result.kind_b}, {result.launches_b} launches)",
        f"{result.kernel_count} kernels{total}",
    ]
    if result.moved_most:
        lines.append("moved most:")
        lines += [f"  {line}" for line in result.moved_most]
    else:
        lines.append(f"nothing moved (no change of {MOVED_REL_PCT:g}% or {MOVED_POINTS:g} points)")
    for row in result.kernels:
        lines += kernel_lines(row, name_width)
    if result.kernel_count > len(result.kernels):
        lines.append(f"... {result.kernel_count - len(result.kernels)} lighter kernels not shown (--top)")
    lines += [f"note: {note}" for note in result.notes]
    return lines


def kernel_lines(row: KernelDiff, name_width: int) -> list[str]:
    """One kernel's block: a one-sided kernel on one line, a pair as a table of its metrics."""
    by_key = {m.key: m for m in METRICS}
    if row.match in ("only_a", "only_b"):
        side = "A" if row.match == "only_a" else "B"
        calls = row.calls_a if side == "A" else row.calls_b
        values = [
            f"{by_key[c.metric].label} {fmt(c.a if side == 'A' else c.b, by_key[c.metric].unit)}"
            for c in row.metrics
            if (c.a if side == "A" else c.b) is not None
        ]
        return [f"{row.kernel[:name_width]}  [only in {side}, {calls}x]  " + ", ".join(values)]
    lines = [f"{row.kernel[:name_width]}  [{row.match} match, {row.calls_a}x -> {row.calls_b}x]"]
    if row.match in ("sole", "base"):
        lines.append(f"    A was: {(row.name_a or '')[:name_width]}")
    if row.launch_a and row.launch_b and row.launch_a != row.launch_b:
        lines.append(f"    launch: {row.launch_a} -> {row.launch_b}")
    lines.append(f"    {'metric':<18}{'A':>10}{'B':>10}{'change':>12}")
    for c in row.metrics:
        if c.a is None and c.b is None:
            continue
        metric = by_key[c.metric]
        delta = "" if c.delta is None else change_text(metric, c)
        label = f"{metric.label} ({metric.unit})"
        lines.append(
            f"    {label:<18}{fmt(c.a, metric.unit):>10}{fmt(c.b, metric.unit):>10}{delta:>12}"
            + ("  *" if c.moved else "")
        )
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "profile_diff"
CLI_NAME = "profile diff"
CLI_HELP = (
    "Before/after: two ncu reports (A B: .ncu-rep or ncu CSV), or two commands profiled with ncu "
    "(--command CMD_A --command CMD_B, or --target NAME: baseline then candidate). Per kernel, matched by name: "
    "time, DRAM/SM throughput, occupancy, registers, instructions, local memory (spills), with changes; what "
    "moved most first."
)
DESCRIPTION = """Compare two Nsight Compute profiles kernel by kernel: time per launch, DRAM and SM throughput, achieved
occupancy, registers per thread, instructions executed and local-memory bytes (spills), each with its
absolute and relative change, and the changes that moved most first.

Give two saved reports (a, b: workspace-relative .ncu-rep or ncu CSV, e.g. profile results), or a target: its
baseline and candidate are profiled with ncu (kernel_regex narrows it, e.g. 'norm'). Use it after every verify
to see what a change did to the hardware; use profile for one report, top_kernels to re-read one.
"""
HINTS = Hints(read_only=False, destructive=False, idempotent=False)
LONG_RUNNING = True
RESULT = ProfileDiff


class Params(BaseModel):
    """profile_diff's parameters: two reports, or what to profile (a target, or two commands on the CLI)."""

    a: Annotated[
        str | None,
        Field(
            description="report A (before): workspace-relative .ncu-rep or ncu CSV; with b; default None",
            max_length=MAX_PATH,
        ),
        Cli(argument=True, help="report A (before): .ncu-rep, ncu details/raw CSV"),
    ] = None
    b: Annotated[
        str | None,
        Field(description="report B (after), like a; default None", max_length=MAX_PATH),
        Cli(argument=True, help="report B (after)"),
    ] = None
    target: Annotated[
        str | None,
        Field(
            description="instead of reports: profile this target's baseline (A) and candidate (B) with ncu; "
            "default None",
            pattern=TARGET_NAME_RE.pattern,
            max_length=64,
        ),
        Cli(("--target", "-t"), "profile this target's baseline (A) and candidate (B)"),
    ] = None
    kernel_regex: Annotated[
        str | None,
        Field(
            description="when profiling: only kernels whose name matches this regex (e.g. 'norm'); default None = all",
            max_length=200,
        ),
        Cli(("--kernel-regex", "-k"), "when profiling: only kernels matching"),
    ] = None
    launch_count: Annotated[
        int | None,
        Field(
            description="when profiling: launches to profile per side, 1 to 1000; default None = 5 when no regex",
            ge=1,
            le=1000,
        ),
        Cli(("--launch-count", "-c"), "when profiling: launches per side"),
    ] = None
    cache_control: Annotated[
        Literal["all", "none"],
        Field(
            description="when profiling: 'all' flushes the caches before each launch (ncu's default; a launch "
            "starts cold, so write-heavy kernels time a few us under a back-to-back loop), 'none' keeps them "
            "(times comparable with verify's); default 'all'"
        ),
        Cli(("--cache-control",), "when profiling: all (flush caches) or none (times as verify sees them)"),
    ] = "all"
    top: Annotated[
        int,
        Field(description="kernels to list, heaviest first, 1 to 100; default 10", ge=1, le=100),
        Cli(("-n", "--top"), "kernels to list"),
    ] = DEFAULT_TOP
    timeout_s: Annotated[
        float,
        Field(description="when profiling: time limit per side in seconds, 1 to 3600; default 600", ge=1, le=3600),
        Cli(("--timeout",), "seconds per side before ncu is killed"),
    ] = 600.0
    command: Annotated[
        list[Annotated[str, Field(max_length=4096)]] | None,
        Field(description="two commands to profile: A then B", max_length=2),
        CLI_ONLY,
        Cli(("--command",), "a command to profile, given twice: A then B (a shell-quoted string)"),
    ] = None
    launch_skip: Annotated[
        int | None,
        Field(description="skip the first N matching launches", ge=0, le=10**6),
        CLI_ONLY,
        Cli(("--launch-skip", "-s"), "when profiling: skip the first N matching launches"),
    ] = None
    out: Annotated[
        str | None,
        Field(description="directory for the two reports", max_length=MAX_PATH),
        CLI_ONLY,
        Cli(
            ("--out",),
            "directory for the reports (a/, b/; default .hotkernel/profiles/<time>-diff in a "
            "workspace, else a temp dir)",
        ),
    ] = None


def _commands(params: Params, ctx: InsightContext) -> list[tuple[str, list[str]]]:
    """The two commands to profile (label, argv), or [] when two reports are given."""
    given = [params.a is not None and params.b is not None, bool(params.command), params.target is not None]
    if sum(given) != 1 or (params.a is None) != (params.b is None):
        raise HotkernelError(
            "profile diff: give two reports (A B), or --command CMD_A --command CMD_B, or --target NAME "
            "(its baseline against its candidate)"
        )
    if params.command:
        if len(params.command) != 2:
            raise HotkernelError(
                f"profile diff: --command given {len(params.command)} time(s); give it twice: A, then B"
            )
        commands = []
        for label, text in zip("AB", params.command, strict=True):
            try:
                argv = shlex.split(text)
            except ValueError as exc:
                raise HotkernelError(f"profile diff: --command {label} {quote(text)}: {exc}") from None
            if not argv:
                raise HotkernelError(f"profile diff: --command {label} is empty; give the command to profile")
            commands.append((label, argv))
        return commands
    if params.target is not None:
        return [
            (label, command_of(ProfileParams(target=params.target, role=role), ctx))
            for label, role in (("A", "baseline"), ("B", "candidate"))
        ]
    return []


def _profile_both(params: Params, ctx: InsightContext, commands: list[tuple[str, list[str]]]) -> list[ProfileResult]:
    """Each command under ncu (basic set + EXTRA_METRICS); a failed side is an error with the diagnosis."""
    if params.out:
        base = ctx.path(params.out, "out")
    elif ctx.workspace is not None:
        base = ctx.workspace.state_dir / "profiles" / f"{time.strftime('%Y%m%d-%H%M%S')}-diff"
    else:
        base = Path(tempfile.mkdtemp(prefix="hotkernel-profile-diff-"))
    launch_count = params.launch_count
    if launch_count is None and not params.kernel_regex:
        launch_count = 5
    results = []
    for step, (label, argv) in enumerate(commands):
        ctx.progress(step, 2, f"ncu {label}: {Path(argv[1] if len(argv) > 1 else argv[0]).name}")
        result = profile(
            argv,
            tool="ncu",
            kernel_regex=params.kernel_regex,
            launch_count=launch_count,
            launch_skip=params.launch_skip,
            cache_control=params.cache_control,
            section_set="basic",
            metrics=EXTRA_METRICS,
            timeout_s=params.timeout_s,
            out_dir=base / label.lower(),
            cwd=ctx.start if ctx.confined else None,
            top=1,
        )
        if not result.ok or result.report is None:
            why = result.diagnosis.one_line() if result.diagnosis else "ncu wrote no report"
            raise HotkernelError(f"profile diff: profiling {label} ({quote(shlex.join(argv), 120)}) failed: {why}")
        results.append(result)
    ctx.progress(2, 2, "diff")
    return results


def run(params: Params, ctx: InsightContext) -> ProfileDiff:
    """Diff the two reports, profiling the two commands first when asked."""
    commands = _commands(params, ctx)
    if not commands:
        hint = "give an .ncu-rep or an ncu CSV (`ncu --csv --page details` or `--page raw`)"
        a = ctx.existing_file(params.a or "", "profile diff: report A (a)", hint)
        b = ctx.existing_file(params.b or "", "profile diff: report B (b)", hint)
        return diff_reports(a, b, top=params.top)
    profile_a, profile_b = _profile_both(params, ctx, commands)
    result = diff_reports(profile_a.report or "", profile_b.report or "", top=params.top)
    result.profile_a, result.profile_b = profile_a, profile_b
    return result
