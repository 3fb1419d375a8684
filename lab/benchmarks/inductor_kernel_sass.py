"""Compile the Triton kernel Inductor printed for the rmsnorm target for sm_90 and report its SASS, as
`lab/speedrun/compile_sm90.py` reports the speedrun kernels (no GPU needed).

    python lab/benchmarks/inductor_kernel_sass.py [R0_BLOCK ...]

The kernel source is read from the captured output code
(`lab/benchmarks/evidence/speedrun/inductor_rmsnorm_20261201/inductor_rmsnorm.txt`), not written out again; only its
`@triton_heuristics.reduction` decorator is dropped and `libdevice` bound to Triton's. Compiled at XBLOCK 1, 16 warps
and 1 stage, Inductor's config on the card (`inductor_configs_20261201/`), for each R0_BLOCK given (default 8192).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lab" / "speedrun"))

import compile_sm90  # noqa: E402
import triton  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

CAPTURE = ROOT / "lab/benchmarks/evidence/speedrun/inductor_rmsnorm_20261201/inductor_rmsnorm.txt"


def inductor_kernel() -> triton.JITFunction:
    """The `@triton.jit` function of the captured output code, loaded from a file of its own (Triton needs one)."""
    lines = [line.split("[__output_code] ", 1)[1] if "[__output_code] " in line else ""
             for line in CAPTURE.read_text().splitlines()]
    start = lines.index("@triton.jit")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("'''"))
    source = "import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice\n\n"
    source += "\n".join(lines[start:end]) + "\n"
    path = Path(tempfile.mkdtemp()) / "inductor_rmsnorm_kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("inductor_rmsnorm_kernel", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.triton_red_fused__fused_rms_norm_0


def report(r0_block: int) -> str:
    fn = inductor_kernel()
    signature = {"in_ptr0": "*bf16", "in_ptr1": "*bf16", "out_ptr1": "*bf16", "xnumel": "i32", "r0_numel": "i32",
                 "XBLOCK": "constexpr", "R0_BLOCK": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(5)}  # as Inductor's triton_meta marks them
    compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs={"XBLOCK": 1, "R0_BLOCK": r0_block},
                                        attrs=attrs),
                              target=compile_sm90.TARGET, options={"num_warps": 16, "num_stages": 1})
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as handle:
        handle.write(compiled.asm["cubin"])
    sass = subprocess.run([str(compile_sm90.CUOBJDUMP), "--dump-sass", handle.name], capture_output=True,
                          text=True, check=True).stdout
    counts: dict[str, int] = {}
    for op in compile_sm90.OPCODES.findall(sass):
        counts[op] = counts.get(op, 0) + 1
    n = len(re.findall(r"^\s+/\*[0-9a-f]{4}\*/", sass, re.MULTILINE))
    return (f"inductor triton_red_fused__fused_rms_norm_0 R0_BLOCK {r0_block} warps 16 stages 1 sass {n} "
            f"loop {compile_sm90.loop_instructions(sass)} {counts}")


if __name__ == "__main__":
    print(f"triton {triton.__version__}")
    for block in [int(arg) for arg in sys.argv[1:]] or [8192]:
        print(report(block))
