"""Compile every speedrun kernel for sm_90 on a machine without a GPU and report what ptxas made of it.

    python lab/speedrun/compile_sm90.py [substring-of-target/variant]

For each kernel of each variant at its headline specialization (the variant's parameters whose upper-case name is a
constexpr of the kernel, plus the shape-derived constexprs below; pointers and integer arguments marked 16-divisible as
Triton's JIT marks them at the headline, an integer whose headline value the job gives only when it is a multiple of 16;
tensor-descriptor arguments typed as the JIT types them, by dtype and block shape; the variant's `num_warps` and, where
it has one, `maxnreg`, or the launch options kernel() fixes for one kernel, such as a combine's `num_warps` and
`launch_pdl`): registers, stack (spills), shared memory, the box each descriptor's TMA copies move (`tma box`), the SASS
instructions in all and in the longest loop body (`loop`: from a backward branch's target to the branch), the global
load/store opcodes (`LDG.E.128` = 16-byte vectors; `LDGSTS` = cp.async; `UTMALDG` / `UTMASTG` = TMA copies; `HMMA` =
tensor cores; `CCTL.E.PF2` = L2 prefetches), the block barriers (`BAR`), and whether the software pipeliner engaged
(`ASYNC`: cp.async in the SASS). Uses the `cuobjdump` shipped in Triton's wheel. No timing: this is compile-time
evidence only; it found, for example, that a plain Python global inside a kernel runs in the interpreter but does not
compile for the GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import triton
from check_variants import load_module, variant_index  # run as a script: lab/speedrun/ is on sys.path
from triton import next_power_of_2
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGET = GPUTarget("cuda", 90, 32)
CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
LAUNCH_NUM_STAGES = 3  # Triton's default: no kernel() passes num_stages at launch
LAUNCH_OPTIONS = ("maxnreg",)  # variant parameters that kernel() passes at launch as compile options
FIXED_LAUNCH = ("num_warps", "num_stages", "launch_pdl")  # launch options a job's headline may fix (kernel() does)
OPCODES = re.compile(r"\b(LDG\S*|STG\S*|LDGSTS\S*|HMMA\S*|LDL\S*|STL\S*|UTMALDG\S*|UTMASTG\S*|I2F\S*|BAR\S*|CCTL\S*)")


def tensordesc(dtype: str, block: tuple[int, ...]) -> str:
    """The signature type of a host `TensorDescriptor` argument, spelled as the JIT's specialization spells it."""
    return f"tensordesc<{dtype}[{', '.join(map(str, block))}]>"


def loop_instructions(sass: str) -> int | None:
    """SASS instructions in the longest loop body (from a backward branch's target to the branch), or None."""
    addressed = [(int(m.group(1), 16), m.group(2)) for m in re.finditer(r"^\s+/\*([0-9a-f]{4,5})\*/\s+(.*?);", sass,
                                                                          re.MULTILINE)]
    longest = None
    for address, text in addressed:
        target = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if target and int(target.group(1), 16) < address:
            start = int(target.group(1), 16)
            body = sum(1 for other, _ in addressed if start <= other <= address)
            longest = body if longest is None else max(longest, body)
    return longest


def compile_kernel(target: str, variant: str, kernel_name: str, types: dict[str, str | int],
                   headline: dict[str, Any]) -> str:
    """Compile one kernel of one variant for sm_90 and return a one-line report (or the compiler's error)."""
    path, params = variant_index(target)[variant]
    fn = getattr(load_module(path), kernel_name)
    from_params = {key.upper(): value for key, value in params.items() if key.upper() in fn.arg_names}
    assert not from_params.keys() & headline.keys(), f"{target}/{variant}: a constexpr given twice"
    fixed = {key: headline[key] for key in FIXED_LAUNCH if key in headline}
    constexprs = {**{key: value for key, value in headline.items() if key not in fixed}, **from_params}
    num_warps, num_stages = fixed.pop("num_warps", params["num_warps"]), fixed.pop("num_stages", LAUNCH_NUM_STAGES)
    launch = {key: params[key] for key in LAUNCH_OPTIONS if key in params and params[key] is not None}
    launch.update((key, value) for key, value in fixed.items() if value)  # launch_pdl=False is the default
    signature: dict[str, str] = {}
    attrs: dict[tuple[int], list[list[Any]]] = {}
    for index, arg in enumerate(fn.arg_names):
        if arg in constexprs:
            signature[arg] = "constexpr"
            continue
        kind = types.get(arg, "i32")  # an int: the integer argument's value at the headline
        signature[arg] = "i32" if isinstance(kind, int) else kind
        divisible = kind % 16 == 0 if isinstance(kind, int) else (kind == "i32" or kind.startswith("*"))
        if divisible:
            attrs[(index,)] = [["tt.divisibility", 16]]
    name = f"{target}/{variant}:{kernel_name}"
    try:
        compiled = triton.compile(
            ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
            target=TARGET,
            options={"num_warps": num_warps, "num_stages": num_stages, **launch},
        )
    except Exception as exc:  # noqa: BLE001 - the report is the point
        return f"ERROR {name}: {str(exc)[:1500]}"
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as handle:
        handle.write(compiled.asm["cubin"])
    try:
        sass = subprocess.run(
            [str(CUOBJDUMP), "--dump-sass", handle.name], capture_output=True, text=True
        ).stdout
        usage = subprocess.run(
            [str(CUOBJDUMP), "--dump-resource-usage", handle.name], capture_output=True, text=True
        ).stdout
    finally:
        os.unlink(handle.name)
    regs = re.search(r"REG:(\d+) STACK:(\d+)", usage)
    counts: dict[str, int] = {}
    for op in OPCODES.findall(sass):
        counts[op] = counts.get(op, 0) + 1
    pipelined = "ASYNC" if any(op.startswith("LDGSTS") for op in counts) else ""
    n_instructions = len(re.findall(r"^\s+/\*[0-9a-f]{4}\*/", sass, re.MULTILINE))
    limits = "".join(f"{key} {value} " for key, value in launch.items())
    boxes = "".join(f"tma box {meta['block_size']} " for meta in compiled.metadata.tensordesc_meta)
    return (
        f"{name:70s} warps {num_warps} stages {num_stages} {limits}regs {regs.group(1) if regs else '?'} "
        f"stack {regs.group(2) if regs else '?'} smem {compiled.metadata.shared} sass {n_instructions} "
        f"loop {loop_instructions(sass)} "
        f"{boxes}{counts} {pipelined}"
    )


BF16, FP32, I32 = "*bf16", "*fp32", "*i32"
RMSNORM = {"x_ptr": BF16, "w_ptr": BF16, "out_ptr": BF16, "eps": "fp32"}
SOFTMAX = {"x_ptr": BF16, "out_ptr": BF16}
GEMV = {"w_ptr": BF16, "x_ptr": BF16, "out_ptr": BF16, "partial_ptr": FP32, "counter_ptr": I32}
DECODE: dict[str, str | int] = {
    "q_ptr": BF16,
    "k_ptr": BF16,
    "v_ptr": BF16,
    "out_ptr": BF16,
    "o_part_ptr": FP32,
    "lse_part_ptr": FP32,
    "counter_ptr": I32,
    "acc_ptr": FP32,
    "m_ptr": FP32,
    "l_ptr": FP32,
    "qk_scale": "fp32",
    "n_kv_heads": 8,
    "n_q_heads": 32,
}
DECODE_C = {"GROUP": 4, "GROUP_PAD": 16, "HEAD_DIM": 128, "DOT_IN_FP32": False}
# tma_stream.py's K and V descriptors: [block_n, HEAD_DIM] boxes over the [batch x KV heads x tokens, HEAD_DIM] view
DECODE_TMA = {n: {**DECODE, "k_desc": tensordesc("bf16", (n, 128)), "v_desc": tensordesc("bf16", (n, 128))}
              for n in (64, 128)}
# the PDL/TMA combines: 2 warps, launched with launch_pdl where the split kernel calls launch_dependents
COMBINE = {"HEAD_DIM": 128, "num_warps": 2}
INT4 = {"x_ptr": BF16, "w_ptr": I32, "sz_ptr": I32, "out_ptr": BF16, "partial_ptr": FP32, "counter_ptr": I32}
INT4_C = {"GROUP": 128, "IKT": 8}
# the row-pair kernel without `sz_carry` (nor its `x_regs` and `xsum_asm`)
INT4_MMA_C = {**INT4_C, "USE_PTX": True, "SZ_CARRY": False, "X_REGS": False, "XSUM_ASM": False, "SZ_BASE": False,
              "XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False, "X_FIXED": False, "SUM_MODE": 0,
              "STATIC_SHAPE": (0, 0, 0)}
# the lop3 kernels read x as int32 bf16 pairs; USE_PTX=True is the GPU path (inline PTX, not interpretable)
INT4_PAIRS = {**{k: v for k, v in INT4.items() if k != "x_ptr"}, "xpair_ptr": I32, "xsum_ptr": FP32,
              "xq_ptr": "*u8"}
ROW = {"BLOCK": 8192}
ROW_DESC = tensordesc("bf16", (1, ROW["BLOCK"]))  # the TMA kernels' descriptors: one row per box
RMSNORM_TMA = {"x_desc": ROW_DESC, "w_ptr": BF16, "out_desc": ROW_DESC, "out_ptr": BF16, "eps": "fp32"}
SOFTMAX_TMA = {"x_desc": ROW_DESC, "out_desc": ROW_DESC}
# the `split_sum` variants of int4_gemv/mma.py: (variant, block_n, split_k, the kernel's SUM_MODE)
SPLIT_SUM_JOBS = (("mma_szbt_bn256_sk8_w4_st3", 256, 8, 2), ("mma_szbt_bn256_sk16_w4_st3", 256, 16, 2),
                  ("mma_szbt_bn128_sk8_w4_st3", 128, 8, 2), ("mma_szbe_bn256_sk8_w4_st3", 256, 8, 1),
                  ("mma_szbe_bn256_sk16_w4_st3", 256, 16, 1), ("mma_szbe_bn128_sk8_w4_st3", 128, 8, 1),
                  ("mma_szbtl_bn256_sk8_w4_st3", 256, 8, 3), ("mma_szbtl_bn256_sk16_w4_st3", 256, 16, 3),
                  ("mma_szbcl_bn256_sk8_w4_st3", 256, 8, 4), ("mma_szbcl_bn256_sk8_w4_st4", 256, 8, 4),
                  ("mma_szbcl_bn128_sk8_w4_st3", 128, 8, 4), ("mma_szbfx_bn256_sk8_w4_st3", 256, 8, 5),
                  ("mma_szbfx_bn128_sk8_w4_st3", 128, 8, 5), ("mma_szbfx_bn256_sk8_w4_st4", 256, 8, 5),
                  ("mma_szbfx_bn256_sk8_w4_st2", 256, 8, 5), ("mma_szbfx_bn128_sk4_w4_st3", 128, 4, 5),
                  ("mma_szbfx_bn256_sk16_w4_st3", 256, 16, 5), ("mma_szbfx_bn256_sk16_w4_st2", 256, 16, 5))
# (target, variant, kernel, argument types (an int: an integer argument's value), shape-derived constexprs and
# FIXED_LAUNCH options, at the headline shape)
JOBS: list[tuple[str, str, str, dict[str, str | int], dict[str, Any]]] = [
    *[("rmsnorm", v, "_rmsnorm_row_kernel", RMSNORM, ROW)
      for v in ("row_per_program", "row_w4", "row_w16", "row_cache_hints")],
    *[("rmsnorm", v, "_rmsnorm_rows_kernel", RMSNORM, ROW) for v in ("multi_row", "rows2_w8")],
    # BLOCK: the variant's chunk (its `block` parameter)
    # STATIC_COLS 0: the row length at run time; INDEX_32: int32 offsets (with STATIC_COLS only)
    *[("rmsnorm", v, "_rmsnorm_two_pass_kernel", RMSNORM, {"STATIC_COLS": 0, "INDEX_32": False})
      for v in ("two_pass_r1024_w4", "two_pass_r2048_w8", "two_pass_r2048_w4", "two_pass_r4096_w8",
                "two_pass_r1024_w2")],
    *[("rmsnorm", v, "_rmsnorm_two_pass_kernel", RMSNORM, {"num_stages": 1, "STATIC_COLS": 0, "INDEX_32": False})
      for v in ("two_pass_r8192_w16_s1", "two_pass_r8192_w8_s1", "two_pass_r4096_w16_s1", "two_pass_r8192_w32_s1",
                "two_pass_r2048_w16_s1", "two_pass_r4096_w8_s1", "two_pass_r4096_w32_s1", "two_pass_r2048_w8_s1")],
    # compiled for the headline's 8192 columns (`specialize_cols`), int32 offsets (4096 x 8192 < 2^31)
    *[("rmsnorm", v, "_rmsnorm_two_pass_kernel", RMSNORM, {"num_stages": 1, "STATIC_COLS": 8192, "INDEX_32": True})
      for v in ("two_pass_s8192_w16_s1", "two_pass_s4096_w16_s1", "two_pass_s8192_w8_s1", "two_pass_s4096_w8_s1",
                "two_pass_s2048_w8_s1", "two_pass_s4096_w32_s1")],
    ("rmsnorm", "persistent_prefetch", "_rmsnorm_persistent_kernel", RMSNORM, ROW),
    ("rmsnorm", "persistent_pipelined", "_rmsnorm_pipelined_kernel", RMSNORM, ROW),
    *[("rmsnorm", v, "_rmsnorm_tma_kernel", RMSNORM_TMA, ROW)
      for v in ("tma_p1_s9", "tma_p2_s5", "tma_p2_s6", "tma_p2_s5_stg")],
    ("rmsnorm", "balanced_p2_w16", "_rmsnorm_balanced_kernel", RMSNORM, ROW),
    *[("rmsnorm", v, "_rmsnorm_late_w_kernel", RMSNORM, ROW) for v in ("late_w_w4", "late_w_w16", "late_w_w8_r48")],
    *[("softmax", v, "_softmax_row_kernel", SOFTMAX, ROW)
      for v in ("row_per_program", "row_w4", "row_w16", "row_cache_hints")],
    *[("softmax", v, "_softmax_rows_kernel", SOFTMAX, ROW) for v in ("multi_row", "rows2_w8")],
    ("softmax", "persistent_prefetch", "_softmax_persistent_kernel", SOFTMAX, ROW),
    ("softmax", "persistent_pipelined", "_softmax_pipelined_kernel", SOFTMAX, ROW),
    *[("softmax", v, "_softmax_tma_kernel", SOFTMAX_TMA, ROW)
      for v in ("tma_p2_s5", "tma_p2_s6", "tma_p3_s4", "tma_p4_s3")],
    # GROUPS: the headline's 8192 columns in groups of GROUP_COLS (one warp's 32 lanes x 8 bf16)
    *[("softmax", v, "_softmax_groups_kernel", SOFTMAX, {"GROUPS": 32, "GROUP_COLS": 256, "STATIC_COLS": 0,
                                                          "INDEX_32": False})
      for v in ("groups_w8", "groups_w16", "groups_pair_w16")],
    *[("softmax", v, "_softmax_groups_kernel", SOFTMAX, {"GROUPS": 32, "GROUP_COLS": 256, "STATIC_COLS": 8192,
                                                          "INDEX_32": True})
      for v in ("groups_pair_s16", "groups_s8")],
    *[("gemv", v, "_gemv_rows_kernel", GEMV, {"EVEN": True})
      for v in ("rows_bm16_bk512", "rows_bm2_bk4096", "rows_bm4_bk2048", "rows_bm4_bk2048_w4", "rows_bm8_bk1024")],
    ("gemv", "rows_pipelined", "_gemv_pipelined_kernel", GEMV, {}),
    ("gemv", "split_k", "_gemv_split_k_kernel", GEMV, {"SPLIT_K": 4}),
    *[("decode_attention", v, "_decode_split_kernel", DECODE, DECODE_C)
      for v in ("split64_two_pass", "split32_two_pass", "split64_bn128_st3", "split64_bn128_st2")],
    # n: the splits per KV head at the headline (on 132 SMs where the SMs decide them), the value of n_splits (33 and
    # 49 are not marked 16-divisible); SPLITS_PAD: its next power of two
    *[("decode_attention", v, "_decode_combine_kernel", {**DECODE, "n_splits": n},
       {"HEAD_DIM": 128, "SPLITS_PAD": next_power_of_2(n), "num_warps": 4})
      for v, n in (("split64_two_pass", 64), ("split32_two_pass", 32), ("split64_bn128_st3", 64),
                   ("split64_bn128_st2", 64))],
    *[("decode_attention", v, "_decode_fused_kernel", {**DECODE, "n_splits": n},
       {**DECODE_C, "SPLITS_PAD": next_power_of_2(n)})
      for v, n in (("sm_split_last_arriver", 32), ("fused_s32_bn64_st4", 32), ("fused_2wave_bn32_st6", 33),
                   ("fused_3wave_bn32_st4", 49), ("fused_1wave_bn64_st5_w8", 16))],
    *[job for v, n in (("pdl_s32_bn64_st4", 32), ("pdl_2wave_bn64_st4", 33), ("pdl_3wave_bn64_st3", 49),
                       ("pdl_2wave_il_bn64_st4", 33), ("pdl_3wave_il_bn64_st3", 49))
      for job in (("decode_attention", v, "_pdl_split_kernel", {**DECODE, "n_splits": n},
                   {**DECODE_C, "USE_PDL": True}),
                  ("decode_attention", v, "_pdl_combine_kernel", {**DECODE, "n_splits": n},
                   {**COMBINE, "SPLITS_PAD": next_power_of_2(n), "USE_PDL": True, "launch_pdl": True}))],
    *[job for v, block_n, n, pdl in (("tma_s32_bn64_st4", 64, 32, False), ("tma_s32_bn64_st4_pdl", 64, 32, True),
                                     ("tma_2wave_bn64_st4_pdl", 64, 33, True),
                                     ("tma_3wave_bn128_st3_pdl", 128, 49, True))
      for job in (("decode_attention", v, "_tma_split_kernel", {**DECODE_TMA[block_n], "n_splits": n},
                   {**DECODE_C, "USE_PDL": pdl}),
                  ("decode_attention", v, "_tma_combine_kernel", {**DECODE, "n_splits": n},
                   {**COMBINE, "BLOCK_D": 32, "SPLITS_PAD": next_power_of_2(n), "USE_PDL": pdl, "launch_pdl": pdl}))],
    *[("int4_gemv", v, "_int4_gemv_kernel", INT4, {**INT4_C, "N_GROUPS": 64})
      for v in ("tile_bn32_g4", "tile_bn16_g8", "tile_bn32_g4_pipelined")],
    ("int4_gemv", "split_k_bn64", "_int4_gemv_split_kernel", INT4, {**INT4_C, "SPLIT_K": 2}),
    *[("int4_gemv", v, "_int4_gemv_rowreg_kernel", INT4, INT4_C)
      for v in ("rowreg_bn128_sk8", "rowreg_bn256_sk16", "rowreg_bn256_sk8_w8", "rowreg_bn256_sk16_w2",
                "rowreg_bn64_sk4_w2")],
    *[("int4_gemv", v, "_int4_gemv_lop3_kernel", INT4_PAIRS, {**INT4_C, "USE_PTX": True})
      for v in ("lop3_f16_bn256_sk16", "lop3w2_f16_bn256_sk16", "lop3w2_f16_bn128_sk8", "lop3w2_f16_bn256_sk8_w8")],
    ("int4_gemv", "lop3acc_bn64_sk8_w4_st4", "_int4_gemv_lop3acc_kernel", INT4_PAIRS, {**INT4_C, "USE_PTX": True}),
    # GPS_PAD: the groups per split (the headline's 64 groups / split-K), a power of two
    *[("int4_gemv", v, "_int4_gemv_lop3xs_kernel", INT4_PAIRS, {**INT4_C, "USE_PTX": True, "GPS_PAD": 64 // split_k})
      for v, split_k in (("lop3xs_bn64_sk8_w4_st4", 8), ("lop3xs_bn64_sk8_w4_st4_partials", 8),
                         ("lop3xs_bn128_sk8_w8_st4", 8), ("lop3xs_bn32_sk8_w2_st4", 8), ("lop3xs_bn128_sk8_w4_st4", 8),
                         ("lop3xs_bn64_sk16_w4_st3", 16))],
    # TILES: 8-row n-tiles per program (block_n / 8)
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False, "L2_AHEAD": 0,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False})
      for v, block_n, split_k in (("mma_bn256_sk16_w4_st3", 256, 16), ("mma_bn128_sk8_w4_st4", 128, 8),
                                  ("mma_bn128_sk16_w4_st3", 128, 16), ("mma_bn256_sk8_w8_st4", 256, 8),
                                  ("mma_bn64_sk8_w2_st4", 64, 8), ("mma_bn128_sk4_w4_st4", 128, 4),
                                  ("mma_bn128_sk8_w4_st6", 128, 8), ("mma_bn64_sk16_w2_st3", 64, 16),
                                  ("mma_bn16_sk1_w1_st8", 16, 1), ("mma_bn32_sk1_w2_st6", 32, 1),
                                  ("mma_bn64_sk1_w4_st8", 64, 1), ("mma_bn128_sk2_w4_st6", 128, 2),
                                  ("mma_bn256_sk16_w8_st3", 256, 16), ("mma_bn256_sk32_w4_st2", 256, 32),
                                  ("mma_bn512_sk32_w8_st2", 512, 32))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "L2_AHEAD": 0, "L2_BULK": False,
        "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False})
      for v, block_n, split_k in (("mma_pf_bn256_sk16_w4_st3", 256, 16), ("mma_pf_bn128_sk8_w4_st4", 128, 8),
                                  ("mma_pf_bn64_sk16_w2_st3", 64, 16), ("mma_pf_bn16_sk1_w1_st8", 16, 1),
                                  ("mma_pf_bn32_sk1_w2_st6", 32, 1), ("mma_pf_bn64_sk2_w2_st6", 64, 2),
                                  ("mma_pf_bn64_sk4_w2_st4", 64, 4))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False})
      for v, block_n, split_k in (("mma_l2pf1_bn256_sk16_w4_st3", 256, 16), ("mma_l2pf2_bn256_sk16_w4_st3", 256, 16),
                                  ("mma_l2pf2_bn256_sk16_w4_st4", 256, 16), ("mma_l2pf1_bn64_sk16_w2_st3", 64, 16),
                                  ("mma_l2pf2_bn128_sk8_w4_st4", 128, 8))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, **({} if ahead else {"L2_AHEAD": 0})})
      for v, block_n, split_k, ahead in (("mma_l2b_bn256_sk16_w4_st3", 256, 16, 0),
                                         ("mma_l2b1_bn256_sk16_w4_st3", 256, 16, 1),
                                         ("mma_l2b_bn128_sk16_w4_st3", 128, 16, 0),
                                         ("mma_l2b_bn128_sk8_w4_st4", 128, 8, 0),
                                         ("mma_l2b_bn256_sk8_w8_st4", 256, 8, 0),
                                         ("mma_l2b_bn64_sk16_w2_st3", 64, 16, 0))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "X_NEXT": False, "SZ_EARLY": False})
      for v, block_n, split_k in (("mma_l2pf1f_bn256_sk16_w4_st3", 256, 16), ("mma_l2pf1f_bn128_sk8_w4_st3", 128, 8),
                                  ("mma_l2pf1f_bn256_sk32_w4_st2", 256, 32))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "SZ_EARLY": False})
      for v, block_n, split_k in (("mma_l2pf1x_bn256_sk16_w4_st3", 256, 16), ("mma_l2pf1x_bn128_sk8_w4_st3", 128, 8),
                                  ("mma_l2pf1x_bn256_sk8_w4_st3", 256, 8))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_MMA_C, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_AHEAD": 0, "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False})
      for v, block_n, split_k in (("mma_l2pe_bn256_sk16_w4_st3", 256, 16), ("mma_l2pe_bn256_sk8_w4_st3", 256, 8),
                                  ("mma_l2pe_bn128_sk8_w4_st3", 128, 8))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "X_REGS": False, "XSUM_ASM": False,
        "SZ_BASE": False, "XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False, "X_FIXED": False,
        "SUM_MODE": 0, "STATIC_SHAPE": (0, 0, 0)})
      for v, block_n, split_k in (("mma_szc_bn256_sk16_w4_st3", 256, 16), ("mma_szc2_bn256_sk16_w4_st3", 256, 16),
                                  ("mma_szc2_bn256_sk16_w4_st3_r128", 256, 16),
                                  ("mma_szc_bn256_sk16_w4_st3_r128", 256, 16),
                                  ("mma_szc2_bn256_sk8_w4_st3", 256, 8), ("mma_szc2_bn128_sk8_w4_st3", 128, 8),
                                  ("mma_szc2_bn256_sk8_w4_st4", 256, 8), ("mma_szc2_bn256_sk8_w8_st3", 256, 8),
                                  ("mma_szc2_bn256_sk4_w4_st3", 256, 4), ("mma_szc2_bn128_sk4_w4_st3", 128, 4),
                                  ("mma_szc2_bn64_sk8_w2_st3", 64, 8), ("mma_szc2_bn128_sk8_w8_st3", 128, 8),
                                  ("mma_szc2_bn128_sk8_w4_st4", 128, 8), ("mma_szc2_bn512_sk8_w8_st3", 512, 8))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "XSUM_ASM": False, "SZ_BASE": False,
        "XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False, "X_FIXED": False, "SUM_MODE": 0,
        "STATIC_SHAPE": (0, 0, 0)})
      for v, block_n, split_k in (("mma_szcx_bn256_sk8_w4_st3", 256, 8), ("mma_szcx_bn128_sk8_w4_st3", 128, 8),
                                  ("mma_szcx_bn256_sk4_w4_st3", 256, 4))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "X_REGS": False, "SZ_BASE": False,
        "XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False, "X_FIXED": False, "SUM_MODE": 0,
        "STATIC_SHAPE": (0, 0, 0)})
      for v, block_n, split_k in (("mma_szcs_bn256_sk8_w4_st3", 256, 8), ("mma_szcs_bn128_sk8_w4_st3", 128, 8))],
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "X_REGS": False, "XSUM_ASM": False,
        "X_FIXED": False, "SUM_MODE": 0, "STATIC_SHAPE": (0, 0, 0), **extra})
      for v, block_n, split_k, extra in (
          ("mma_szb_bn256_sk8_w4_st3", 256, 8, {"XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False}),
          ("mma_szb_bn256_sk16_w4_st3", 256, 16, {"XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False}),
          ("mma_szb_bn128_sk8_w4_st3", 128, 8, {"XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False}),
          ("mma_szb_bn256_sk8_w4_st4", 256, 8, {"XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False}),
          ("mma_szbm_bn256_sk8_w4_st3", 256, 8, {"WORDS_REGS": False, "TWO_CHAINS": False}),
          ("mma_szbr_bn256_sk8_w4_st3", 256, 8, {"XSUM_MEM": False, "TWO_CHAINS": False}),
          ("mma_szbrm_bn256_sk8_w4_st3", 256, 8, {"TWO_CHAINS": False}),
          ("mma_szbrm_bn128_sk8_w4_st3", 128, 8, {"TWO_CHAINS": False}),
          ("mma_szb2c_bn256_sk8_w4_st3", 256, 8, {"XSUM_MEM": False, "WORDS_REGS": False}),
          ("mma_szb2c_bn256_sk16_w4_st3", 256, 16, {"XSUM_MEM": False, "WORDS_REGS": False}))],
    # x in fixed point (`x_fixed`): the kept sz_base loop on the integer tensor cores
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "X_REGS": False, "XSUM_ASM": False,
        "XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False, "SUM_MODE": 0, "STATIC_SHAPE": (0, 0, 0)})
      for v, block_n, split_k in (("mma_szq_bn256_sk8_w4_st3", 256, 8), ("mma_szq_bn256_sk16_w4_st3", 256, 16),
                                  ("mma_szq_bn128_sk8_w4_st3", 128, 8), ("mma_szq_bn256_sk8_w4_st4", 256, 8),
                                  ("mma_szqr_bn256_sk8_w4_st3", 256, 8), ("mma_szqr_bn256_sk16_w4_st3", 256, 16),
                                  ("mma_szqr_bn128_sk8_w4_st3", 128, 8), ("mma_szqw_bn256_sk8_w4_st3", 256, 8),
                                  ("mma_szqw_bn256_sk16_w4_st3", 256, 16), ("mma_szqw_bn256_sk8_w4_st4", 256, 8),
                                  ("mma_szqp_bn256_sk8_w4_st3", 256, 8), ("mma_szqp_bn256_sk16_w4_st3", 256, 16),
                                  ("mma_szqp_bn128_sk8_w4_st3", 128, 8), ("mma_szqpr_bn256_sk8_w4_st3", 256, 8),
                                  ("mma_szqpr_bn128_sk8_w4_st3", 128, 8), ("mma_szqpr_bn256_sk16_w4_st3", 256, 16))],
    # who sums the split-K partials (`split_sum`): the sz_base loop's row tickets (SUM_MODE 1), or its partials only
    # and the sum grid (2: its launch asked for at the start, 3: after the partials' store), or the cluster (4), or
    # the fixed-point row words (5: int64 words in counter_ptr)
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", {**INT4_PAIRS, "counter_ptr": "*i64"} if mode >= 5 else INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": block_n // 8, "GPS_PAD": 64 // split_k, "PREFETCH": False,
        "L2_BULK": False, "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "X_REGS": False, "XSUM_ASM": False,
        "XSUM_MEM": False, "WORDS_REGS": False, "TWO_CHAINS": False, "X_FIXED": False, "SUM_MODE": mode,
        "STATIC_SHAPE": (0, 0, 0)})
      for v, block_n, split_k, mode in SPLIT_SUM_JOBS],
    # compiled for the headline's shape (`specialize_shape`): n_out 8192, 64 k-outer tiles, 64 / split_k groups a split
    *[("int4_gemv", v, "_int4_gemv_mma_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "TILES": 32, "GPS_PAD": 64 // split_k, "PREFETCH": False, "L2_BULK": False,
        "L2_FIRST": False, "X_NEXT": False, "SZ_EARLY": False, "X_REGS": False, "XSUM_ASM": False, "XSUM_MEM": False,
        "WORDS_REGS": False, "TWO_CHAINS": False, "X_FIXED": False, "SUM_MODE": 0,
        "STATIC_SHAPE": (8192, 64, 64 // split_k)})
      for v, split_k in (("mma_szbc_bn256_sk8_w4_st3", 8), ("mma_szbc_bn256_sk16_w4_st3", 16))],
    *[("int4_gemv", v, "_split_sum_kernel", INT4_PAIRS,
       {"BLOCK": 256, "USE_PDL": True, "num_warps": 2, "launch_pdl": True})
      for v, _, _, mode in SPLIT_SUM_JOBS if mode in (2, 3)],
    # x_fixed 4's prepare grid: one program a split (GPS_PAD groups of 64 x pairs)
    *[("int4_gemv", v, "_xq_prepare_kernel", INT4_PAIRS, {"GPS_PAD": 64 // split_k, "PAIRS": 64, "USE_PDL": True})
      for v, split_k in (("mma_szqp_bn256_sk8_w4_st3", 8), ("mma_szqp_bn256_sk16_w4_st3", 16),
                         ("mma_szqp_bn128_sk8_w4_st3", 8), ("mma_szqpr_bn256_sk8_w4_st3", 8),
                         ("mma_szqpr_bn128_sk8_w4_st3", 8), ("mma_szqpr_bn256_sk16_w4_st3", 16))],
    # groups as rows: PAIRS_PER_PROGRAM n-tile pairs (block_n / 16); the headline's groups per split divide GROUP_ROWS
    *[("int4_gemv", v, "_int4_gemv_mma_groups_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "PAIRS_PER_PROGRAM": block_n // 16, "EVEN_GROUPS": True, "L2_AHEAD": 0})
      for v, block_n in (("mmag_p1_g16_sk1_w4_st3", 16), ("mmag_p1_g16_sk1_w4_st4", 16), ("mmag_p1_g8_sk1_w2_st4", 16),
                         ("mmag_p1_g8_sk1_w4_st4", 16), ("mmag_p1_g32_sk1_w8_st3", 16), ("mmag_p1_g16_sk2_w4_st3", 16),
                         ("mmag_p2_g8_sk1_w4_st4", 32), ("mmag_p1_g32_sk2_w8_st2", 16),
                         ("mmag_p4_g16_sk1_w16_st2", 64), ("mmag_p4_g16_sk1_w16_st3", 64),
                         ("mmag_p4_g8_sk1_w8_st3", 64), ("mmag_p4_g8_sk1_w16_st3", 64), ("mmag_p2_g16_sk1_w16_st3", 32),
                         ("mmag_p2_g8_sk1_w16_st3", 32))],
    *[("int4_gemv", v, "_int4_gemv_mma_groups_kernel", INT4_PAIRS,
       {**INT4_C, "USE_PTX": True, "PAIRS_PER_PROGRAM": block_n // 16, "EVEN_GROUPS": True})
      for v, block_n in (("mmag_l2pf1_p4_g16_sk1_w16_st3", 64), ("mmag_l2pf1_p2_g8_sk1_w16_st3", 32))],
]

# (target, variant) -> why it has no job; every other variant of check_variants.variant_index has one
# (lab/tests/speedrun/test_compile_sm90_jobs.py)
NO_JOB: dict[tuple[str, str], str] = {}


def main(argv: list[str]) -> int:
    """Compile the kernels whose `target/variant` contains argv[0] (all by default); exit 1 if any failed."""
    selected = argv[0] if argv else ""
    failed = 0
    for target, variant, kernel_name, types, headline in JOBS:
        if selected in f"{target}/{variant}":
            line = compile_kernel(target, variant, kernel_name, types, headline)
            failed += line.startswith("ERROR")
            print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
