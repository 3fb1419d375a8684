"""SASS or PTX of a kernel, with a summary an agent reads first (registers, spills, shared memory,
load/store widths, matrix instructions, local-memory traffic, barriers) and the listing cut at ``max_lines``.

``cuobjdump`` is found on PATH, under ``CUDA_HOME``/``CUDA_PATH``, in /usr/local/cuda, or inside the Triton
wheel (``triton/backends/nvidia/bin``, found without importing triton), which works without a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from hotkernel._util.procs import find_executable, run_command
from hotkernel.errors import HotkernelError
from hotkernel.insight.base import CLI_ONLY, Cli, Hints, InsightContext
from hotkernel.workspace.paths import MAX_PATH

TRITON_CACHE = "triton-cache"
DISASM_TIMEOUT_S = 120.0
SASS_LINE_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
FUNCTION_RE = re.compile(r"^\s*Function\s*:\s*(\S+)")
RES_FUNCTION_RE = re.compile(r"^\s*Function\s+([^:\s]+):")
RES_FIELD_RE = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")
MATRIX_PREFIXES = (
    "HMMA",
    "HGMMA",
    "IMMA",
    "IGMMA",
    "QGMMA",
    "UTCHMMA",
    "UTCQMMA",
    "UTCIMMA",
    "UTCOMMA",
    "DMMA",
    "BMMA",
    "OMMA",
    "QMMA",
)
WIDTH_MODIFIERS = {"128": 128, "64": 64, "U16": 16, "S16": 16, "U8": 8, "S8": 8}
GLOBAL_MEMORY_OPS = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDSM", "STSM", "ATOMG", "RED")


class SassSummary(BaseModel):
    """What matters in a listing, counted over the kernel's instructions."""

    instructions: int
    registers: int | None = Field(default=None, description="per thread (cuobjdump -res-usage)")
    stack_bytes: int | None = None
    local_bytes: int | None = Field(default=None, description="local memory per thread; > 0 often means spills")
    shared_bytes: int | None = Field(default=None, description="static shared memory (cuobjdump -res-usage)")
    triton_shared_bytes: int | None = Field(default=None, description="'shared' in the Triton metadata")
    num_warps: int | None = None
    num_stages: int | None = None
    memory_ops: dict[str, int] = Field(default_factory=dict, description="e.g. {'LDG.128': 8, 'STG.128': 4}")
    matrix_ops: dict[str, int] = Field(default_factory=dict, description="HMMA / HGMMA (wgmma) / IMMA / QGMMA")
    local_loads: int = Field(default=0, description="LDL: local-memory (spill) loads")
    local_stores: int = Field(default=0, description="STL: local-memory (spill) stores")
    barriers: dict[str, int] = Field(default_factory=dict)
    top_opcodes: dict[str, int] = Field(default_factory=dict, description="the 12 most frequent opcodes")
    hints: list[str] = []


class DisasmResult(BaseModel):
    """Summary first, then the (cut) listing; ``full_listing`` is the file with all of it."""

    source: str = Field(description="file disassembled")
    kernel: str | None
    functions: list[str]
    kind: str = Field(description="sass | ptx")
    tool: str | None
    summary: SassSummary | None
    ptx_summary: dict[str, int] | None = None
    listing: str
    total_lines: int
    shown_lines: int
    note: str | None = None
    full_listing: str | None = None
    metadata: str | None = None
    other_builds: list[str] = Field(
        default_factory=list,
        description="triton-cache: the other cached builds of this kernel name, newest first (other constexprs, "
        "warps or stages); the one shown is the newest by file time",
    )


def find_cuobjdump() -> Path | None:
    """``cuobjdump`` from PATH, CUDA_HOME/CUDA_PATH, /usr/local/cuda, or the Triton wheel."""
    return find_executable(
        "cuobjdump",
        env_homes=("CUDA_HOME", "CUDA_PATH"),
        extra_dirs=("/usr/local/cuda/bin", *(d for d in [triton_bin_dir()] if d is not None)),
    )


def triton_bin_dir() -> Path | None:
    """``triton/backends/nvidia/bin`` of the installed Triton wheel, found without importing triton."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "backends" / "nvidia" / "bin"
        if path.is_dir():
            return path
    return None


def triton_cache_dirs() -> list[Path]:
    """``TRITON_CACHE_DIR`` (when set), then ``~/.triton/cache``."""
    dirs = []
    if os.environ.get("TRITON_CACHE_DIR"):
        dirs.append(Path(os.environ["TRITON_CACHE_DIR"]))
    dirs.append(Path.home() / ".triton" / "cache")
    return dirs


def find_triton_kernel(name: str | None, cache_dirs: list[Path] | None = None) -> Path:
    """The newest ``<hash>/<name>.cubin`` (exact name first, else names containing ``name``); without a name,
    the newest kernel in the cache (what the last compile produced)."""
    return triton_builds(name, cache_dirs)[0]


def triton_builds(name: str | None, cache_dirs: list[Path] | None = None) -> list[Path]:
    """Every cached ``<hash>/<name>.cubin`` that ``find_triton_kernel`` chooses among, newest first (without a
    name: just the newest kernel)."""
    dirs = [d for d in (cache_dirs or triton_cache_dirs()) if d.is_dir()]
    if not dirs:
        searched = ", ".join(str(d) for d in (cache_dirs or triton_cache_dirs()))
        raise HotkernelError(f"disasm: no Triton cache at {searched}; run the kernel once, or set TRITON_CACHE_DIR")
    cubins = [p for d in dirs for p in d.glob("*/*.cubin")]
    if not name:
        if not cubins:
            raise HotkernelError(
                f"disasm: the Triton cache ({', '.join(map(str, dirs))}) holds no kernel yet; run the kernel once"
            )
        return [max(cubins, key=lambda p: p.stat().st_mtime)]
    exact = [p for p in cubins if p.stem == name]
    matches = exact or [p for p in cubins if name.lower() in p.stem.lower()]
    if not matches:
        known = sorted({p.stem for p in cubins})
        listing = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "") if known else "none"
        raise HotkernelError(
            f"disasm: no kernel named {name!r} in the Triton cache ({', '.join(map(str, dirs))}); "
            f"cached kernels: {listing}"
        )
    return sorted(matches, key=lambda p: p.stat().st_mtime, reverse=True)


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """``cuobjdump -res-usage`` output -> {function: {"REG": 64, "STACK": 0, "SHARED": 1024, ...}}."""
    usage: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        match = RES_FUNCTION_RE.match(line)
        if match:
            current = match.group(1)
            continue
        if current is not None and "REG:" in line:
            usage[current] = {key: int(value) for key, value in RES_FIELD_RE.findall(line)}
            current = None
    return usage


def split_functions(sass: str) -> dict[str, list[str]]:
    """The lines of a ``cuobjdump -sass`` listing, by ``Function : name``."""
    functions: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass.splitlines():
        match = FUNCTION_RE.match(line)
        if match:
            current = functions.setdefault(match.group(1), [])
        if current is not None:
            current.append(line)
    return functions


def opcodes(lines: list[str]) -> list[str]:
    """The opcode (with modifiers) of every instruction line."""
    return [m.group(2) for m in map(SASS_LINE_RE.match, lines) if m]


def memory_key(opcode: str) -> str | None:
    """``LDG.E.128.CONSTANT`` -> ``LDG.128``; ``STS`` -> ``STS.32``; None for non-memory opcodes."""
    base, *modifiers = opcode.split(".")
    if base not in GLOBAL_MEMORY_OPS:
        return None
    width = next((WIDTH_MODIFIERS[m] for m in modifiers if m in WIDTH_MODIFIERS), 32)
    return f"{base}.{width}"


def summarise_sass(lines: list[str], usage: dict[str, int] | None = None, meta: dict | None = None) -> SassSummary:
    """Count what matters in one function's SASS lines; add resource usage and Triton metadata if given."""
    ops = opcodes(lines)
    counts = Counter(ops)
    memory = Counter(key for key in map(memory_key, ops) if key)
    matrix = Counter(op for op in ops if op.split(".")[0] in MATRIX_PREFIXES)
    barriers = Counter(op for op in ops if op.split(".")[0] in ("BAR", "BSYNC", "WARPSYNC", "SYNCS", "MEMBAR"))
    usage = usage or {}
    summary = SassSummary(
        instructions=len(ops),
        registers=usage.get("REG"),
        stack_bytes=usage.get("STACK"),
        local_bytes=usage.get("LOCAL"),
        shared_bytes=usage.get("SHARED"),
        triton_shared_bytes=(meta or {}).get("shared"),
        num_warps=(meta or {}).get("num_warps"),
        num_stages=(meta or {}).get("num_stages"),
        memory_ops=dict(sorted(memory.items())),
        matrix_ops=dict(sorted(matrix.items())),
        local_loads=sum(n for op, n in counts.items() if op.split(".")[0] == "LDL"),
        local_stores=sum(n for op, n in counts.items() if op.split(".")[0] == "STL"),
        barriers=dict(sorted(barriers.items())),
        top_opcodes=dict(counts.most_common(12)),
    )
    summary.hints = sass_hints(summary)
    return summary


def sass_hints(summary: SassSummary) -> list[str]:
    """Plain-language flags: spills, narrow global accesses, no tensor-core instructions."""
    hints = []
    if summary.local_loads or summary.local_stores or (summary.local_bytes or 0) > 0:
        hints.append(
            f"local memory in use ({summary.local_stores} STL / {summary.local_loads} LDL, "
            f"{summary.local_bytes or 0} B/thread): likely register spills"
        )
    narrow = {
        k: v for k, v in summary.memory_ops.items() if k.split(".")[0] in ("LDG", "STG") and int(k.split(".")[1]) < 128
    }
    if narrow:
        hints.append(f"global accesses narrower than 128 bit: {narrow} (vectorise if the data is contiguous)")
    if summary.registers is not None and summary.registers > 128:
        hints.append(f"{summary.registers} registers/thread limits occupancy")
    return hints


def summarise_ptx(text: str) -> dict[str, int]:
    """Counts of the PTX instructions that matter: vector global loads/stores, mma/wgmma, local, barriers."""
    patterns = {
        "ld.global": r"\bld\.global\b",
        "ld.global.v2": r"\bld\.global[.\w]*\.v2\b",
        "ld.global.v4": r"\bld\.global[.\w]*\.v4\b",
        "st.global": r"\bst\.global\b",
        "st.global.v4": r"\bst\.global[.\w]*\.v4\b",
        "ld.shared": r"\bld\.shared\b",
        "st.shared": r"\bst\.shared\b",
        "ld.local": r"\bld\.local\b",
        "st.local": r"\bst\.local\b",
        "mma.sync": r"\bmma\.sync\b",
        "wgmma.mma_async": r"\bwgmma\.mma_async\b",
        "cp.async": r"\bcp\.async\b",
        "bar.sync": r"\bbar\.sync\b",
    }
    return {name: len(re.findall(pattern, text)) for name, pattern in patterns.items()}


def _cut_listing(text: str, max_lines: int) -> tuple[str, int, int, str | None]:
    lines = [line for line in text.splitlines() if line.strip() and not re.match(r"^\s+/\* 0x[0-9a-f]+ \*/\s*$", line)]
    shown = lines[:max_lines] if max_lines > 0 else lines
    note = None
    if len(shown) < len(lines):
        note = f"listing cut at {len(shown)} of {len(lines)} lines (--max-lines); all in full_listing"
    return "\n".join(shown), len(lines), len(shown), note


def _run_cuobjdump(tool: Path, args: list[str], target: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="hotkernel-disasm-") as scratch:
        proc = run_command(
            [str(tool), *args, str(target)], timeout_s=DISASM_TIMEOUT_S, name="cuobjdump", out_dir=scratch
        )
        text = proc.stdout()
        err = proc.stderr(2000)
    if "does not contain device code" in err or "Invalid fatbin header" in err or "not an ELF" in err.lower():
        raise HotkernelError(
            f"disasm: {target} is not a CUDA binary ({err.strip().splitlines()[-1]}); give a .cubin, a .ptx, "
            "a CUDA .so/executable, or `triton-cache --kernel NAME`"
        )
    if not proc.ok:
        last = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise HotkernelError(f"disasm: cuobjdump {' '.join(args)} failed on {target}: {last}")
    return text


def disasm(
    target: str,
    *,
    kernel: str | None = None,
    ptx: bool = False,
    max_lines: int = 200,
    out_path: str | os.PathLike[str] | None = None,
    cache_dirs: list[Path] | None = None,
) -> DisasmResult:
    """Disassemble ``target`` (a path, or ``triton-cache`` with ``kernel``); summary first, listing cut."""
    if max_lines < 0:
        raise HotkernelError(f"disasm: max_lines={max_lines} must be >= 0 (0 = no listing, summary only)")
    meta_path, others = None, []
    if target == TRITON_CACHE:
        path, *others = triton_builds(kernel or "", cache_dirs)
        meta_path = path.with_suffix(".json")
        if ptx:
            path = path.with_suffix(".ptx")
            if not path.is_file():
                raise HotkernelError(f"disasm: the Triton cache entry {path.parent} has no .ptx next to the cubin")
        kernel = path.stem
    else:
        path = Path(target)
        if not path.is_file():
            raise HotkernelError(
                f"disasm: {target!r} not found; give a .cubin, .ptx, CUDA binary or `triton-cache --kernel K`"
            )
        if path.suffix == ".cubin" and path.with_suffix(".json").is_file():
            meta_path = path.with_suffix(".json")
    meta = _read_meta(meta_path)
    if path.suffix == ".ptx":
        text = path.read_text(errors="replace")
        if ".version" not in text and ".entry" not in text:
            raise HotkernelError(f"disasm: {path} does not look like PTX (no .version/.entry directive)")
        return _result(
            path,
            kernel,
            "ptx",
            None,
            text,
            None,
            summarise_ptx(text),
            max_lines,
            out_path,
            meta_path,
            _ptx_functions(text),
            others,
        )
    tool = find_cuobjdump()
    if tool is None:
        raise HotkernelError(
            "disasm: cuobjdump not found on PATH, under CUDA_HOME, /usr/local/cuda or in the Triton wheel; "
            "install the CUDA toolkit or `pip install triton`"
        )
    if ptx:
        text = _run_cuobjdump(tool, ["-ptx"], path)
        if not text.strip():
            raise HotkernelError(f"disasm: {path} holds no embedded PTX (only SASS); drop --ptx for the SASS")
        return _result(
            path,
            kernel,
            "ptx",
            tool,
            text,
            None,
            summarise_ptx(text),
            max_lines,
            out_path,
            meta_path,
            _ptx_functions(text),
            others,
        )
    sass = _run_cuobjdump(tool, ["-sass"], path)
    usage = parse_res_usage(_run_cuobjdump(tool, ["-res-usage"], path))
    functions = split_functions(sass)
    if not functions:
        raise HotkernelError(f"disasm: cuobjdump found no SASS function in {path}")
    chosen = _choose_function(functions, kernel, path)
    lines = functions[chosen]
    summary = summarise_sass(lines, usage.get(chosen), meta)
    return _result(
        path,
        chosen,
        "sass",
        tool,
        "\n".join(lines),
        summary,
        None,
        max_lines,
        out_path,
        meta_path,
        list(functions),
        others,
    )


def _choose_function(functions: dict[str, list[str]], kernel: str | None, path: Path) -> str:
    if kernel is None:
        if len(functions) == 1:
            return next(iter(functions))
        names = list(functions)
        raise HotkernelError(
            f"disasm: {path} holds {len(names)} kernels; pick one with --kernel NAME: {', '.join(names[:15])}"
        )
    if kernel in functions:
        return kernel
    close = [name for name in functions if kernel in name]
    if len(close) == 1:
        return close[0]
    raise HotkernelError(
        f"disasm: no kernel {kernel!r} in {path} ({len(close)} partial matches); kernels: "
        f"{', '.join(list(functions)[:15])}"
    )


def _ptx_functions(text: str) -> list[str]:
    return re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", text)


def _read_meta(path: Path | None) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return None


def _result(
    path: Path,
    kernel: str | None,
    kind: str,
    tool: Path | None,
    text: str,
    summary: SassSummary | None,
    ptx_summary: dict[str, int] | None,
    max_lines: int,
    out_path,
    meta_path: Path | None,
    functions: list[str],
    others: list[Path],
) -> DisasmResult:
    listing, total, shown, note = _cut_listing(text, max_lines)
    full = None
    if out_path is not None or note is not None:
        full_path = (
            Path(out_path) if out_path is not None else _scratch_file(f"hotkernel-{kernel or path.stem}-", f".{kind}")
        )
        full_path.write_text(text)
        full = str(full_path)
    return DisasmResult(
        source=str(path),
        kernel=kernel,
        functions=functions,
        kind=kind,
        tool=str(tool) if tool else None,
        summary=summary,
        ptx_summary=ptx_summary,
        listing=listing,
        total_lines=total,
        shown_lines=shown,
        note=note,
        full_listing=full,
        metadata=str(meta_path) if meta_path and meta_path.is_file() else None,
        other_builds=[str(p) for p in others],
    )


def _scratch_file(prefix: str, suffix: str) -> Path:
    handle, name = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    os.close(handle)
    return Path(name)


def summary_lines(result: DisasmResult) -> list[str]:
    """The summary an agent reads before the listing."""
    lines = [f"{result.kind.upper()} of {result.kernel or '?'} from {result.source}"]
    s = result.summary
    if s is not None:
        lines.append(
            f"registers {s.registers}, stack {s.stack_bytes} B, local {s.local_bytes} B, "
            f"shared {s.shared_bytes} B"
            + (
                f" (Triton metadata: shared {s.triton_shared_bytes} B, num_warps {s.num_warps}, "
                f"num_stages {s.num_stages})"
                if s.num_warps is not None
                else ""
            )
        )
        lines.append(f"{s.instructions} instructions; memory ops {s.memory_ops}")
        lines.append(
            f"matrix ops {s.matrix_ops or 'none'}; spills: {s.local_stores} STL / {s.local_loads} LDL; "
            f"barriers {s.barriers or 'none'}"
        )
        lines.extend(f"hint: {hint}" for hint in s.hints)
    if result.ptx_summary is not None:
        lines.append("PTX counts: " + ", ".join(f"{k} {v}" for k, v in result.ptx_summary.items() if v))
    if result.note:
        lines.append(f"note: {result.note}")
    if result.other_builds:
        shown = ", ".join(result.other_builds[:3]) + (" ..." if len(result.other_builds) > 3 else "")
        lines.append(
            f"note: {len(result.other_builds)} other build(s) of {result.kernel} in the Triton cache; this is the "
            "newest by file time, and a build reused from the cache keeps its old time: check num_warps and "
            f"shared above, or disassemble another by its path: {shown}"
        )
    if result.full_listing:
        lines.append(f"full listing: {result.full_listing}")
    if result.listing:
        lines += ["", result.listing]
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "disasm"
CLI_NAME = "disasm"
CLI_HELP = (
    "Registers, spills, shared memory, load/store widths, HMMA/WGMMA counts, LDL/STL and barriers, then the "
    "listing cut at --max-lines (the full listing goes to a file it names). SOURCE is a .cubin, .ptx, CUDA "
    ".so/executable, or 'triton-cache'."
)
DESCRIPTION = """Disassemble a compiled kernel (SASS via cuobjdump, or PTX) with a summary to read first: registers,
spills (local memory), shared memory, load/store widths, matrix (tensor-core) instructions, barriers.

Use it after the first compile of a candidate to check what the compiler made of it (vector widths,
spills, tensor cores). Works without a GPU. The full listing is saved under .hotkernel/disasm/. For timing
use bench/verify; for runtime counters use profile.
"""
HINTS = Hints(read_only=False, destructive=False, idempotent=True)
LONG_RUNNING = False
RESULT = DisasmResult


class Params(BaseModel):
    """disasm's parameters."""

    source: Annotated[
        str,
        Field(
            description="what to disassemble: 'triton-cache' (a kernel Triton compiled, found by name in "
            "~/.triton/cache) or a workspace-relative .cubin / .ptx / CUDA binary path",
            min_length=1,
            max_length=MAX_PATH,
        ),
        Cli(argument=True, help="a .cubin, .ptx, CUDA .so/executable, or 'triton-cache'"),
    ]
    kernel: Annotated[
        str | None,
        Field(
            description="kernel name (or a unique part of it); with 'triton-cache' the newest matching kernel, "
            "and None there means the newest kernel in the cache; default None",
            max_length=512,
        ),
        Cli(("--kernel", "-k"), "kernel name (triton-cache: default the newest)"),
    ] = None
    ptx: Annotated[
        bool, Field(description="show PTX instead of SASS; default false"), Cli(("--ptx",), "show PTX instead of SASS")
    ] = False
    max_lines: Annotated[
        int,
        Field(description="listing lines to return, 0 to 5000 (0 = summary only); default 200", ge=0, le=5000),
        Cli(("--max-lines",), "listing lines to print (0: summary only)"),
    ] = 200
    out: Annotated[
        str | None,
        Field(description="write the full listing to this file", max_length=MAX_PATH),
        CLI_ONLY,
        Cli(("--out",), "write the full listing to this file"),
    ] = None


def run(params: Params, ctx: InsightContext) -> DisasmResult:
    """Disassemble; under MCP the full listing goes to .hotkernel/disasm/ in the workspace."""
    source = params.source
    if source != TRITON_CACHE:
        source = str(ctx.existing_file(source, "source", "or use 'triton-cache' with kernel"))
    out_path: Path | None = ctx.path(params.out, "out") if params.out else None
    if out_path is None and ctx.confined:
        out_dir = ctx.require_workspace("disasm").state_dir / "disasm"
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = "".join(c if c.isalnum() or c in "_-" else "_" for c in (params.kernel or Path(source).stem or "newest"))
        out_path = out_dir / f"{stem[:80]}.{'ptx' if params.ptx else 'sass'}"
    return disasm(source, kernel=params.kernel, ptx=params.ptx, max_lines=params.max_lines, out_path=out_path)
