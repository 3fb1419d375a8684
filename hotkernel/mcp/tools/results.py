"""The results tools: leaderboard, history and invalidate_record."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hotkernel.errors import quote
from hotkernel.mcp.base import TargetName, inside, known_target, rel, tool, workspace_of
from hotkernel.store.leaderboard import best_entries, board_rows, board_summary, write_leaderboard
from hotkernel.store.models import BestEntry, HistoryEntry, LeaderboardRow, Record, SuiteSummary
from hotkernel.store.record import history as target_history
from hotkernel.store.record import invalidate_record as mark
from hotkernel.workspace.lockfile import workspace_lock
from hotkernel.workspace.paths import MAX_PATH

LOCK_WAIT_S = 30.0  # how long a board write waits for a sync or a manifest edit to release the workspace lock


class Leaderboard(BaseModel):
    """leaderboard: LEADERBOARD.md regenerated from results/, and its rows."""

    path: str = Field(description="workspace-relative path of LEADERBOARD.md")
    markdown: str = Field(description="the file's content")
    rows: list[LeaderboardRow] = Field(
        description="one row per record, sorted by target, device, path; role says candidate or competitor; a "
        "faster candidate is confirmed (a second verify of the same files agrees: it can be the best) or "
        "awaiting_confirmation; imported marks a result recorded from a file"
    )
    best: list[BestEntry] = Field(
        description="per target and device: the best confirmed candidate with its headline (median: the median "
        "speedup of the counted runs of its files, with their count and range), the fastest competitor, the best "
        "candidate's speedup over that competitor (vs_competitor; below 1 the competitor is faster), and the "
        "fastest faster record still awaiting confirmation (awaiting)"
    )
    summary: list[SuiteSummary] = Field(
        description="per suite and device: KernelBench fast_p (p = 0, 1.0, 1.5, 2.0) and the geometric mean "
        "speedup of the faster targets (targets named kb<N>_... form suite 'kernelbench level N')"
    )


class History(BaseModel):
    """history: every record of one target."""

    target: str = Field(description="target name")
    records: list[HistoryEntry] = Field(
        description="oldest first; invalidated records included (counted=false); each says whether it is "
        "confirmed or awaiting_confirmation, imported, its run_id and the record it confirms"
    )
    awaiting_confirmation: list[str] = Field(
        default_factory=list,
        description="paths of the counted faster records no second verify of the same files confirms yet: verify "
        "again and record with confirms=<path>, or run sync",
    )
    imported: list[str] = Field(
        default_factory=list, description="paths of the records imported from a file rather than the run store"
    )


@tool(read_only=False, destructive=False, idempotent=True)
def leaderboard(ctx: Context) -> Leaderboard:
    """Regenerate LEADERBOARD.md (and the roofline charts, the README headline) from every record under results/
    and return it with its rows, the best candidate against the best competitor, and the suite summary (fast_p).

    Deterministic: the same records give the same bytes. Use history for one target's records, show_target for
    its latest verdicts.
    """
    ws = workspace_of(ctx)
    with workspace_lock(ws, wait_s=LOCK_WAIT_S, command="MCP leaderboard"):
        path = write_leaderboard(ws)
    rows = board_rows(ws)  # the rows LEADERBOARD.md lists: the current protocol's vouched records
    return Leaderboard(
        path=rel(ws, path),
        markdown=path.read_text(encoding="utf-8"),
        rows=rows,
        best=best_entries(rows),
        summary=board_summary(ws).suites,
    )


@tool(read_only=True, destructive=False, idempotent=True)
def history(ctx: Context, target: TargetName) -> History:
    """List every record of a target (oldest first), with verdict, speedup, who, note, whether it counts, whether
    it is confirmed or awaiting confirmation, and whether it was imported.

    Reads only. Use leaderboard for all targets, invalidate_record to discount a bad record.
    """
    ws = workspace_of(ctx)
    known_target(ws, target)
    records = target_history(ws, target)
    return History(
        target=target,
        records=records,
        awaiting_confirmation=[r.path for r in records if r.awaiting_confirmation],
        imported=[r.path for r in records if r.imported],
    )


@tool(read_only=False, destructive=True, idempotent=True)
def invalidate_record(
    ctx: Context,
    path: Annotated[
        str,
        Field(
            description="workspace-relative path of the record, e.g. "
            "'results/rmsnorm/2026-11-30T03-00-00Z.json' "
            "(history lists them)",
            min_length=1,
            max_length=MAX_PATH,
        ),
    ],
    reason: Annotated[
        str,
        Field(
            description="one line saying why it no longer counts (max 300 characters)",
            min_length=3,
            max_length=300,
        ),
    ],
) -> Record:
    """Mark a record as not counted, with a reason; the raw record file stays (nothing is deleted).

    Use it for a record later found wrong (a broken GPU clock, a contract bug). LEADERBOARD.md is regenerated.
    Use history to find the path.
    """
    ws = workspace_of(ctx)
    record_path = inside(ws, path, "path")
    if ws.results_dir.resolve() not in record_path.parents:
        raise ToolError(f"path {quote(path)} is not under results/: give a record path that history lists")
    with workspace_lock(ws, wait_s=LOCK_WAIT_S, command="MCP invalidate_record"):
        result = mark(ws, record_path, reason)
        write_leaderboard(ws)
    return result
