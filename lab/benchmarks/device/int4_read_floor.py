"""How fast the int4 GEMV's bytes can be read on the H200: the kept kernel against reads of the same bytes.

Usage (device, repo root): python3 lab/benchmarks/device/int4_read_floor.py OUT.jsonl [WHAT,...]
(WHAT: flat, tiles, kept, tinygemm, split_sum; all but split_sum when left out)

The kept `mma_szc2_bn256_sk8_w4_st3` moves 35.7 MB in about 14.8 us (57% of the copy ceiling). This asks what
part of that is the weight stream itself, at the kernel's own grid and pipeline, and what part the decode, the
mma chain and the split-K sum add. Each line of OUT.jsonl is one kernel at one setting:
- `flat`: the packed weight and scales read as one contiguous stream (`_read_flat_kernel`), the floor for 35.7 MB;
- `tiles`: the kept kernel's reads and nothing else (`_read_tiles_kernel`: the same [pairs, 128] word tiles, the
  same program grid, `tl.range` pipeline and `evict_first`, words folded by xor), with `epilogue` 0 (one store
  a program) or 1 (the kept kernel's split-K sum, `mma._store_rows`), and `scales` (the scale rows read too);
- `kept` and `tinygemm`: the kept variant and the baseline, timed the same way.

What the H200 said (lab/benchmarks/evidence/speedrun/h200_c21/read_floor.jsonl): the word stream at the kept grid,
`tiles` without scales and epilogue 0, 10.38 us against 14.60 us for the kernel. Two kinds of setting measure this
script rather than a floor: with `scales` the plain gathered load of the scale rows in the tile layout (every
element its row's word) ran 37-60 us, far slower than the kernel's own scale loads, and `flat` launches two
kernels (the weight, then the scales), 11.6-12.7 us.

Timer (`time_us`): a CUDA graph of `CALLS` calls over input sets rotated through more than 3x L2, replayed
`REPLAYS` times, median per call, as `lab/speedrun/check_variants.py time_variant` does (mode `bare`); mode
`perturbed` puts the contract's per-call perturbation around each call (one element of x written before, restored
after, `targets/hk_contract.py` `call`) and subtracts a graph of the perturbations alone, so the two modes show
what the contract's timed call adds to a ~15 us kernel.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun")]

import check_variants as cv  # noqa: E402
import int4_gemv.mma as mma  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from int4_gemv.mma import _counters, _store_rows  # noqa: E402

from kernels.int4_gemv import int4_gemv  # noqa: E402

KEPT = "mma_szc2_bn256_sk8_w4_st3"
CALLS = 40  # calls per graph
REPLAYS = 9  # graph replays; the median replay gives the result
ROTATE_L2_MULTIPLE = 3.0  # rotated input sets exceed this multiple of the L2


@triton.jit
def _read_tiles_kernel(w_ptr, sz_ptr, out_ptr, partial_ptr, counter_ptr, n_out, n_k_outer, groups_per_split,
                       TILES: tl.constexpr, SPLIT_K: tl.constexpr, NUM_STAGES: tl.constexpr, SCALES: tl.constexpr,
                       EPILOGUE: tl.constexpr):
    """The kept kernel's word reads (group size 128, IKT 8: one 512-byte k-outer tile per n-tile and group)."""
    HALF: tl.constexpr = TILES // 2
    block = tl.program_id(0)
    split = tl.program_id(2)
    i = tl.arange(0, HALF)[:, None]
    col = tl.arange(0, 128)[None, :]
    even_tile = block * TILES + 2 * i
    w_even = w_ptr + tl.cast(even_tile, tl.int64) * n_k_outer * 128 + col
    w_odd = w_even + n_k_outer * 128
    rows = (even_tile + (col % 4) // 2) * 8 + col // 16
    acc = tl.zeros([HALF, 128], dtype=tl.int32)
    for gi in tl.range(0, groups_per_split, num_stages=NUM_STAGES):
        ko = split * groups_per_split + gi
        acc ^= tl.load(w_even + ko * 128, eviction_policy="evict_first")
        acc ^= tl.load(w_odd + ko * 128, eviction_policy="evict_first")
        if SCALES:
            acc ^= tl.load(sz_ptr + ko * n_out + rows)
    if EPILOGUE == 0:
        tl.store(out_ptr + block * tl.num_programs(2) + split, tl.sum(tl.sum(acc, axis=1), axis=0).to(tl.bfloat16))
    else:
        _store_rows((acc & 0xFF).to(tl.float32), out_ptr, partial_ptr, counter_ptr, n_out, 0, block, 0, split, HALF,
                    SPLIT_K, 0, True)


@triton.jit
def _read_flat_kernel(ptr, out_ptr, n_words, words_per_program, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Each program folds its contiguous `words_per_program` int32 words by xor, BLOCK words an iteration."""
    start = tl.program_id(0) * words_per_program
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for step in tl.range(0, words_per_program, BLOCK, num_stages=NUM_STAGES):
        idx = start + step + offs
        acc ^= tl.load(ptr + idx, mask=idx < n_words, other=0, eviction_policy="evict_first")
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


def tiles_reader(block_n: int, split_k: int, num_warps: int, num_stages: int, scales: bool, epilogue: int):
    def read(x: torch.Tensor, w: torch.Tensor, sz: torch.Tensor, group_size: int = 128) -> torch.Tensor:
        n_out, n_groups = w.shape[0] * 8, sz.shape[0]
        n_blocks = triton.cdiv(n_out, block_n)
        out = torch.empty(max(n_out, n_blocks * split_k), dtype=torch.bfloat16, device=w.device)
        partial = torch.empty((split_k, 1, n_out), dtype=torch.float32, device=w.device)
        _read_tiles_kernel[(n_blocks, 1, split_k)](
            w, sz.view(torch.int32).view(n_groups, n_out), out, partial, _counters(w.device, n_blocks), n_out,
            w.shape[1], n_groups // split_k, TILES=block_n // 8, SPLIT_K=split_k, NUM_STAGES=num_stages,
            SCALES=scales, EPILOGUE=epilogue, num_warps=num_warps)
        return out
    return read


def flat_reader(programs: int, block: int, num_warps: int, num_stages: int):
    def read(x: torch.Tensor, w: torch.Tensor, sz: torch.Tensor, group_size: int = 128) -> torch.Tensor:
        out = torch.empty(2 * programs, dtype=torch.int32, device=w.device)
        for half, t in enumerate((w.view(-1), sz.view(torch.int32).view(-1))):
            n = t.numel()
            per = triton.cdiv(triton.cdiv(n, programs), block) * block
            _read_flat_kernel[(triton.cdiv(n, per),)](t, out[half * programs:], n, per, BLOCK=block,
                                                      NUM_STAGES=num_stages, num_warps=num_warps)
        return out
    return read


def time_us(fn, inputs: tuple, kwargs: dict, bytes_per_call: int, perturbed: bool) -> float:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    n_sets = max(2, math.ceil(ROTATE_L2_MULTIPLE * l2 / bytes_per_call))
    sets = [tuple(t.clone() for t in inputs) for _ in range(n_sets)]
    pos = torch.zeros(1, dtype=torch.int64, device="cuda")
    val = torch.full((1,), 2.5, dtype=torch.bfloat16, device="cuda")
    orig = torch.zeros(1, dtype=torch.bfloat16, device="cuda")

    def graph_of(body) -> torch.cuda.CUDAGraph:
        for k in range(n_sets):
            body(k)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for j in range(CALLS):
                body(j % n_sets)
        return graph

    def perturb(k: int) -> None:
        sets[k][0].view(-1).index_copy_(0, pos, val)

    def restore(k: int) -> None:
        sets[k][0].view(-1).index_copy_(0, pos, orig)

    def call(k: int) -> None:
        if perturbed:
            perturb(k)
        fn(*sets[k], **kwargs)
        if perturbed:
            restore(k)

    ms = cv.graph_replay_ms(graph_of(call), CALLS, REPLAYS)
    if perturbed:
        ms -= cv.graph_replay_ms(graph_of(lambda k: (perturb(k), restore(k))), CALLS, REPLAYS)
    return 1e3 * ms


def settings() -> list[tuple[str, dict, object]]:
    rows: list[tuple[str, dict, object]] = []
    for programs, block, warps, stages in ((256, 4096, 4, 3), (528, 2048, 4, 3), (1056, 2048, 8, 2),
                                           (132, 8192, 8, 4), (264, 4096, 8, 3)):
        params = {"programs": programs, "block": block, "num_warps": warps, "num_stages": stages}
        rows.append(("flat", params, flat_reader(**params)))
    for block_n, split_k, warps, stages, scales, epilogue in (
            (256, 8, 4, 3, False, 0), (256, 8, 4, 3, True, 0), (256, 8, 4, 3, True, 1), (256, 8, 4, 4, True, 1),
            (256, 8, 4, 5, True, 1), (256, 8, 8, 3, True, 1), (128, 8, 4, 3, True, 1), (256, 16, 4, 3, True, 1),
            (256, 4, 4, 3, True, 1), (512, 8, 8, 3, True, 1), (256, 8, 4, 2, True, 1)):
        params = {"block_n": block_n, "split_k": split_k, "num_warps": warps, "num_stages": stages,
                  "scales": scales, "epilogue": epilogue}
        rows.append(("tiles", params, tiles_reader(**params)))
    rows.append(("kept", {"variant": KEPT}, cv.variant_kernel("int4_gemv", KEPT)))
    rows.append(("tinygemm", {}, None))
    return rows


SPLIT_SUM_BASE = {"block_n": 256, "split_k": 8, "num_warps": 4, "num_stages": 3, "sz_carry": True, "l2_ahead": 1,
                  "sz_base": True}  # mma_szb_bn256_sk8_w4_st3, the kept variant
SUM_KERNEL = mma._split_sum_kernel


class _SumLaunch:
    """Stands in for `mma._split_sum_kernel` during one call: launched with `launch_pdl` or not, or not at all."""

    def __init__(self, pdl: bool | None) -> None:
        self.pdl = pdl

    def __getitem__(self, grid):
        if self.pdl is None:
            return lambda *args, **kwargs: None
        return lambda *args, **kwargs: SUM_KERNEL[grid](*args, **{**kwargs, "USE_PDL": self.pdl,
                                                                    "launch_pdl": self.pdl})


def with_sum(kernel, pdl: bool | None):
    """`kernel` (a `split_sum="grid"` candidate) with its sum grid launched as `_SumLaunch(pdl)` says."""
    def call(*args, **kwargs):
        mma._split_sum_kernel = _SumLaunch(pdl)
        try:
            return kernel(*args, **kwargs)
        finally:
            mma._split_sum_kernel = SUM_KERNEL
    return call


def sum_alone(split_k: int):
    """`_split_sum_kernel` alone over a GEMV's partials, as the grid candidate launches it, without PDL."""
    def call(x: torch.Tensor, w: torch.Tensor, sz: torch.Tensor, group_size: int = 128) -> torch.Tensor:
        n_out = w.shape[0] * 8
        partial = torch.empty((split_k, 1, n_out), dtype=torch.float32, device=w.device)
        out = torch.empty((1, n_out), dtype=torch.bfloat16, device=w.device)
        SUM_KERNEL[(triton.cdiv(n_out, mma.SUM_BLOCK), 1)](partial, out, n_out, out.stride(0), SPLIT_K=split_k,
                                                           BLOCK=mma.SUM_BLOCK, USE_PDL=False,
                                                           num_warps=mma.SUM_WARPS)
        return out
    return call


def split_sum_settings() -> list[tuple[str, dict, object]]:
    """Who sums the split-K partials, at the kept grid: the kept last arriver, a ticket per row, the thread-block
    cluster, the fixed-point row words, the sum grid with `launch_pdl` (launch asked for at the GEMV's start or
    after each program's store) and without, the GEMV of the grid form alone (its sum not launched) and the sum
    alone."""
    grid = mma.make_kernel(**SPLIT_SUM_BASE, split_sum="grid")
    return [("split_sum", {"split_sum": "block"}, mma.make_kernel(**SPLIT_SUM_BASE)),
            ("split_sum", {"split_sum": "grid_late", "pdl": True}, mma.make_kernel(**SPLIT_SUM_BASE,
                                                                                  split_sum="grid_late")),
            ("split_sum", {"split_sum": "rows"}, mma.make_kernel(**SPLIT_SUM_BASE, split_sum="rows")),
            ("split_sum", {"split_sum": "cluster"}, mma.make_kernel(**SPLIT_SUM_BASE, split_sum="cluster")),
            ("split_sum", {"split_sum": "fixed"}, mma.make_kernel(**SPLIT_SUM_BASE, split_sum="fixed")),
            ("split_sum", {"split_sum": "grid", "pdl": True}, grid),
            ("split_sum", {"split_sum": "grid", "pdl": False}, with_sum(grid, False)),
            ("split_sum", {"split_sum": "grid", "sum": "not launched"}, with_sum(grid, None)),
            ("split_sum", {"sum_alone": True}, sum_alone(SPLIT_SUM_BASE["split_k"]))]


def kernel_timeline(fn, inputs: tuple, kwargs: dict, calls: int = 8) -> list[dict]:
    """The GPU kernels of `calls` eager calls (after warm-up) as torch.profiler's CUDA trace saw them: name, start
    and duration in us, the start relative to the first kernel's."""
    for _ in range(3):
        fn(*inputs, **kwargs)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*inputs, **kwargs)
        torch.cuda.synchronize()
    events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
    t0 = events[0].time_range.start if events else 0
    return [{"name": e.name[:60], "start_us": round(e.time_range.start - t0, 3),
             "dur_us": round(e.time_range.end - e.time_range.start, 3)} for e in events]


def main() -> None:
    out_path = Path(sys.argv[1])
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None  # e.g. split_sum: those settings only
    (_, inputs, kwargs, _), *_ = cv.make_cases("int4_gemv", "headline", "cuda")
    moved = cv.HEADLINE_BYTES["int4_gemv"]
    rows = [row for row in settings() + split_sum_settings()
            if (only is None and row[0] != "split_sum") or (only is not None and row[0] in only)]
    with out_path.open("w") as out:
        if only and "split_sum" in only:  # where the sum grid's kernels run, in eager calls
            for params, fn in ((row[1], row[2]) for row in rows if row[1].get("split_sum") in ("grid", "grid_late")
                               and "sum" not in row[1]):
                line = {"what": "timeline", "params": params, "kernels": kernel_timeline(fn, inputs, kwargs)}
                out.write(json.dumps(line) + "\n")
        for what, params, fn in rows:
            fn = fn or int4_gemv
            for mode in ("bare", "perturbed"):
                try:
                    us = time_us(fn, inputs, kwargs, moved, perturbed=mode == "perturbed")
                    line = {"what": what, "params": params, "mode": mode, "us": round(us, 3),
                            "tb_per_s": round(moved / us / 1e6, 3)}
                except Exception as err:  # a setting that does not compile or launch is reported, not fatal
                    line = {"what": what, "params": params, "mode": mode, "error": f"{type(err).__name__}: {err}"}
                print(json.dumps(line), flush=True)
                out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
