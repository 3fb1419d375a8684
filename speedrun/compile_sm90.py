"""Compile every speedrun kernel for sm_90 on a machine without a GPU and report what ptxas made of it.

    python speedrun/compile_sm90.py [substring-of-path]

For each kernel at its headline specialization (constexprs below; pointers and integer arguments marked
16-divisible as Triton's JIT does for these shapes): registers, stack (spills), shared memory, the global
load/store opcodes (`LDG.E.128` = 16-byte vectors; `LDGSTS` = cp.async; `HMMA` = tensor cores), and whether
the software pipeliner engaged (`ASYNC`: cp.async in the SASS). Uses the `cuobjdump` shipped in Triton's
wheel. No timing: this is compile-time evidence only; it found, for example, that a plain Python global inside
a kernel runs in the interpreter but does not compile for the GPU.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SPEEDRUN_DIR = Path(__file__).resolve().parent
TARGET = GPUTarget("cuda", 90, 32)
CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
NOT_16_DIVISIBLE = ("n_kv_heads", "n_q_heads")  # 8 and 32 at the headline: the JIT marks only multiples of 16
OPCODES = re.compile(r"\b(LDG\S*|STG\S*|LDGSTS\S*|HMMA\S*|LDL\S*|STL\S*|UTMALDG\S*|I2F\S*)")


def load_module(path: Path) -> Any:
    """Import one candidate file by path."""
    spec = importlib.util.spec_from_file_location(f"sm90_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None, f"cannot import {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_kernel(
    path: Path,
    kernel_name: str,
    types: dict[str, str],
    constexprs: dict[str, Any],
    num_warps: int,
    num_stages: int,
) -> str:
    """Compile one kernel for sm_90 and return a one-line report (or the compiler's error)."""
    fn = getattr(load_module(path), kernel_name)
    signature: dict[str, str] = {}
    attrs: dict[tuple[int], list[list[Any]]] = {}
    for index, arg in enumerate(fn.arg_names):
        if arg in constexprs:
            signature[arg] = "constexpr"
            continue
        signature[arg] = types.get(arg, "i32")
        if (signature[arg].startswith("*") or signature[arg] == "i32") and arg not in NOT_16_DIVISIBLE:
            attrs[(index,)] = [["tt.divisibility", 16]]
    name = f"{path.parent.name}/{path.name}:{kernel_name}"
    try:
        compiled = triton.compile(
            ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
            target=TARGET,
            options={"num_warps": num_warps, "num_stages": num_stages},
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
    return (
        f"{name:70s} warps {num_warps} stages {num_stages} regs {regs.group(1) if regs else '?'} "
        f"stack {regs.group(2) if regs else '?'} smem {compiled.metadata.shared} sass {n_instructions} "
        f"{counts} {pipelined}"
    )


BF16, FP32, I32 = "*bf16", "*fp32", "*i32"
RMSNORM = {"x_ptr": BF16, "w_ptr": BF16, "out_ptr": BF16, "eps": "fp32"}
SOFTMAX = {"x_ptr": BF16, "out_ptr": BF16}
GEMV = {"w_ptr": BF16, "x_ptr": BF16, "out_ptr": BF16, "partial_ptr": FP32, "counter_ptr": I32}
DECODE = {
    "q_ptr": BF16,
    "k_ptr": BF16,
    "v_ptr": BF16,
    "out_ptr": BF16,
    "o_part_ptr": FP32,
    "lse_part_ptr": FP32,
    "counter_ptr": I32,
    "qk_scale": "fp32",
}
GEMV_ROWS_C = {"EVEN": True}
DECODE_C = {"GROUP": 4, "GROUP_PAD": 16, "HEAD_DIM": 128, "BLOCK_N": 64, "DOT_IN_FP32": False}
INT4 = {"x_ptr": BF16, "w_ptr": I32, "sz_ptr": I32, "out_ptr": BF16, "partial_ptr": FP32, "counter_ptr": I32}
INT4_C = {"GROUP": 128, "IKT": 8}
# the lop3 kernels read x as int32 bf16 pairs; USE_PTX=True is the GPU path (inline PTX, not interpretable)
INT4_PAIRS = {**{k: v for k, v in INT4.items() if k != "x_ptr"}, "xpair_ptr": I32}
INT4_LOP3_C = {**INT4_C, "USE_PTX": True, "X_PRESCALE": 0.0625}
# (file, kernel, argument types, headline constexprs, num_warps, num_stages), as each kernel() launches them
JOBS: list[tuple[str, str, dict[str, str], dict[str, Any], int, int]] = [
    ("rmsnorm/row_per_program.py", "_rmsnorm_row_kernel", RMSNORM, {"BLOCK": 8192}, 8, 3),
    ("rmsnorm/row_cache_hints.py", "_rmsnorm_row_hint_kernel", RMSNORM, {"BLOCK": 8192}, 8, 3),
    ("rmsnorm/multi_row.py", "_rmsnorm_rows_kernel", RMSNORM, {"BLOCK": 8192, "ROWS": 4}, 16, 3),
    ("rmsnorm/persistent_prefetch.py", "_rmsnorm_persistent_kernel", RMSNORM, {"BLOCK": 8192}, 16, 3),
    (
        "rmsnorm/persistent_pipelined.py",
        "_rmsnorm_pipelined_kernel",
        RMSNORM,
        {"BLOCK": 8192, "NUM_STAGES": 3},
        8,
        3,
    ),
    ("softmax/row_per_program.py", "_softmax_row_kernel", SOFTMAX, {"BLOCK": 8192}, 8, 3),
    ("softmax/row_cache_hints.py", "_softmax_row_hint_kernel", SOFTMAX, {"BLOCK": 8192}, 16, 3),
    ("softmax/multi_row.py", "_softmax_rows_kernel", SOFTMAX, {"BLOCK": 8192, "ROWS": 2}, 16, 3),
    ("softmax/persistent_prefetch.py", "_softmax_persistent_kernel", SOFTMAX, {"BLOCK": 8192}, 16, 3),
    (
        "softmax/persistent_pipelined.py",
        "_softmax_pipelined_kernel",
        SOFTMAX,
        {"BLOCK": 8192, "NUM_STAGES": 3},
        8,
        3,
    ),
    ("rmsnorm/row_w4.py", "_rmsnorm_row_kernel", RMSNORM, {"BLOCK": 8192}, 4, 3),
    ("rmsnorm/row_w16.py", "_rmsnorm_row_kernel", RMSNORM, {"BLOCK": 8192}, 16, 3),
    ("rmsnorm/rows2_w8.py", "_rmsnorm_rows_kernel", RMSNORM, {"BLOCK": 8192, "ROWS": 2}, 8, 3),
    ("softmax/row_w4.py", "_softmax_row_kernel", SOFTMAX, {"BLOCK": 8192}, 4, 3),
    ("softmax/row_w16.py", "_softmax_row_kernel", SOFTMAX, {"BLOCK": 8192}, 16, 3),
    ("softmax/rows2_w8.py", "_softmax_rows_kernel", SOFTMAX, {"BLOCK": 8192, "ROWS": 2}, 8, 3),
    ("gemv/rows_bm2_bk4096.py", "_gemv_rows_kernel", GEMV,
     {**GEMV_ROWS_C, "BLOCK_M": 2, "BLOCK_K": 4096}, 8, 3),
    ("gemv/rows_bm4_bk2048_w4.py", "_gemv_rows_kernel", GEMV,
     {**GEMV_ROWS_C, "BLOCK_M": 4, "BLOCK_K": 2048}, 4, 3),
    ("gemv/rows_bm8_bk1024.py", "_gemv_rows_kernel", GEMV,
     {**GEMV_ROWS_C, "BLOCK_M": 8, "BLOCK_K": 1024}, 8, 3),
    (
        "gemv/rows_bm16_bk512.py",
        "_gemv_rows_kernel",
        GEMV,
        {"BLOCK_M": 16, "BLOCK_K": 512, "EVEN": True},
        8,
        3,
    ),
    (
        "gemv/rows_bm4_bk2048.py",
        "_gemv_rows_kernel",
        GEMV,
        {"BLOCK_M": 4, "BLOCK_K": 2048, "EVEN": True},
        8,
        3,
    ),
    (
        "gemv/rows_pipelined.py",
        "_gemv_pipelined_kernel",
        GEMV,
        {"BLOCK_M": 32, "BLOCK_K": 256, "NUM_STAGES": 4},
        8,
        3,
    ),
    ("gemv/split_k.py", "_gemv_split_k_kernel", GEMV, {"BLOCK_M": 64, "BLOCK_K": 128, "SPLIT_K": 4}, 8, 3),
    (
        "decode_attention/split64_two_pass.py",
        "_decode_split_kernel",
        DECODE,
        {**DECODE_C, "NUM_STAGES": 3},
        4,
        3,
    ),
    (
        "decode_attention/split64_two_pass.py",
        "_decode_combine_kernel",
        DECODE,
        {"HEAD_DIM": 128, "SPLITS_PAD": 64},
        4,
        3,
    ),
    (
        "decode_attention/split32_two_pass.py",
        "_decode_split_kernel",
        DECODE,
        {**DECODE_C, "NUM_STAGES": 4},
        4,
        4,
    ),
    (
        "decode_attention/sm_split_last_arriver.py",
        "_decode_fused_kernel",
        DECODE,
        {**DECODE_C, "NUM_STAGES": 3, "SPLITS_PAD": 32},
        4,
        3,
    ),
    ("decode_attention/split64_bn128_st3.py", "_decode_split_kernel", DECODE,
     {**DECODE_C, "BLOCK_N": 128, "NUM_STAGES": 3}, 4, 3),
    ("decode_attention/split64_bn128_st2.py", "_decode_split_kernel", DECODE,
     {**DECODE_C, "BLOCK_N": 128, "NUM_STAGES": 2}, 4, 3),
    ("decode_attention/fused_s32_bn64_st4.py", "_decode_fused_kernel", DECODE,
     {**DECODE_C, "NUM_STAGES": 4, "SPLITS_PAD": 32}, 4, 3),
    ("decode_attention/fused_2wave_bn32_st6.py", "_decode_fused_kernel", DECODE,
     {**DECODE_C, "BLOCK_N": 32, "NUM_STAGES": 6, "SPLITS_PAD": 64}, 4, 3),
    ("decode_attention/fused_3wave_bn32_st4.py", "_decode_fused_kernel", DECODE,
     {**DECODE_C, "BLOCK_N": 32, "NUM_STAGES": 4, "SPLITS_PAD": 64}, 4, 3),
    ("decode_attention/fused_1wave_bn64_st5_w8.py", "_decode_fused_kernel", DECODE,
     {**DECODE_C, "NUM_STAGES": 5, "SPLITS_PAD": 16}, 8, 3),
    (
        "int4_gemv/tile_bn32_g4.py",
        "_int4_gemv_kernel",
        INT4,
        {**INT4_C, "BLOCK_N": 32, "GROUPS_PER_ITER": 4, "N_GROUPS": 64},
        4,
        3,
    ),
    (
        "int4_gemv/tile_bn16_g8.py",
        "_int4_gemv_kernel",
        INT4,
        {**INT4_C, "BLOCK_N": 16, "GROUPS_PER_ITER": 8, "N_GROUPS": 64},
        4,
        3,
    ),
    (
        "int4_gemv/tile_bn32_g4_pipelined.py",
        "_int4_gemv_kernel",
        INT4,
        {**INT4_C, "BLOCK_N": 32, "GROUPS_PER_ITER": 4, "N_GROUPS": 64, "NUM_STAGES": 3},
        4,
        3,
    ),
    (
        "int4_gemv/split_k_bn64.py",
        "_int4_gemv_split_kernel",
        INT4,
        {**INT4_C, "BLOCK_N": 64, "GROUPS_PER_ITER": 2, "SPLIT_K": 2},
        4,
        3,
    ),
    ("int4_gemv/rowreg_bn128_sk8.py", "_int4_gemv_rowreg_kernel", INT4,
     {**INT4_C, "BLOCK_N": 128, "SPLIT_K": 8, "NUM_STAGES": 3}, 4, 3),
    ("int4_gemv/rowreg_bn256_sk16.py", "_int4_gemv_rowreg_kernel", INT4,
     {**INT4_C, "BLOCK_N": 256, "SPLIT_K": 16, "NUM_STAGES": 3}, 4, 3),
    ("int4_gemv/rowreg_bn256_sk8_w8.py", "_int4_gemv_rowreg_kernel", INT4,
     {**INT4_C, "BLOCK_N": 256, "SPLIT_K": 8, "NUM_STAGES": 3}, 8, 3),
    ("int4_gemv/rowreg_bn256_sk16_w2.py", "_int4_gemv_rowreg_kernel", INT4,
     {**INT4_C, "BLOCK_N": 256, "SPLIT_K": 16, "NUM_STAGES": 3}, 2, 3),
    ("int4_gemv/rowreg_bn64_sk4_w2.py", "_int4_gemv_rowreg_kernel", INT4,
     {**INT4_C, "BLOCK_N": 64, "SPLIT_K": 4, "NUM_STAGES": 4}, 2, 3),
    ("int4_gemv/lop3_f16_bn256_sk16.py", "_int4_gemv_lop3_kernel", INT4_PAIRS,
     {**INT4_LOP3_C, "BLOCK_N": 256, "SPLIT_K": 16, "NUM_STAGES": 3}, 4, 3),
    ("int4_gemv/lop3w2_f16_bn256_sk16.py", "_int4_gemv_lop3_kernel", INT4_PAIRS,
     {**INT4_LOP3_C, "X_PRESCALE": 0.015625, "BLOCK_N": 256, "SPLIT_K": 16, "NUM_STAGES": 3}, 4, 3),
    ("int4_gemv/lop3w2_f16_bn128_sk8.py", "_int4_gemv_lop3_kernel", INT4_PAIRS,
     {**INT4_LOP3_C, "X_PRESCALE": 0.015625, "BLOCK_N": 128, "SPLIT_K": 8, "NUM_STAGES": 3}, 4, 3),
    ("int4_gemv/lop3w2_f16_bn256_sk8_w8.py", "_int4_gemv_lop3_kernel", INT4_PAIRS,
     {**INT4_LOP3_C, "X_PRESCALE": 0.015625, "BLOCK_N": 256, "SPLIT_K": 8, "NUM_STAGES": 3}, 8, 3),
]


def main(argv: list[str]) -> int:
    """Compile the kernels whose path contains argv[0] (all by default); exit 1 if any failed."""
    selected = argv[0] if argv else ""
    failed = 0
    for rel, kernel_name, types, constexprs, num_warps, num_stages in JOBS:
        if selected in rel:
            line = compile_kernel(SPEEDRUN_DIR / rel, kernel_name, types, constexprs, num_warps, num_stages)
            failed += line.startswith("ERROR")
            print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
