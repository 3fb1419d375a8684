"""The inline PTX of the `lop3acc` / `lop3xs` int4 GEMV candidates decodes tinygemm's nibbles in the right order.

The decode differs from `lop3.py`'s: one shift per word, and the weight comes out as (q - 8) / 16 (fma with 1/16 and
-64.5 for pairs 0 and 2, with 1/256 and -4.5 for pairs 1 and 3, masked in place), with x unscaled. The PTX text is
run through the emulator of `test_speedrun_lop3_ptx.py`. With small integer x every fp16 step is exact, so 16 times
the result must equal sum_p (q_p - 8) x_p exactly. A second check bounds the fp16 rounding for normal x, and an
interpreter run covers splits of several groups and k tiles of several words (the small checker cases do not).
"""

from __future__ import annotations

import functools
import importlib.util
import random
from pathlib import Path
from types import ModuleType

import pytest
from triton_interpreter import run_interpreted

np = pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("triton")

REPO = Path(__file__).resolve().parents[3]
INT4_DIR = REPO / "lab" / "speedrun" / "int4_gemv"
MODULES = ("lop3acc", "lop3xs")


@functools.cache
def _load(path: Path, name: str) -> ModuleType:
    """One file imported by path, once."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _emulator() -> ModuleType:
    return _load(Path(__file__).resolve().parent / "test_speedrun_lop3_ptx.py", "lop3xs_ptx_emulator")


def _idea(name: str) -> ModuleType:
    return _load(INT4_DIR / f"{name}.py", f"lop3xs_ptx_{name}")


def _word_dot(module: ModuleType, word: int, pairs: list[int]) -> float:
    emu = _emulator()
    return float(emu.run_ptx(module._DECODE_DOT_PTX.value, {1: word, **{2 + a: pairs[a] for a in range(4)}})[0])


@pytest.mark.parametrize("name", MODULES)
def test_decode_is_exact_for_small_integer_x(name: str) -> None:
    emu, module = _emulator(), _idea(name)
    rng = random.Random(2)
    for _ in range(300):
        word = rng.getrandbits(32)
        xs = [(rng.randint(-4, 4), rng.randint(-4, 4)) for _ in range(4)]
        exact = sum(((word >> 4 * a & 0xF) - 8) * lo + ((word >> (16 + 4 * a) & 0xF) - 8) * hi
                    for a, (lo, hi) in enumerate(xs))
        assert 16 * _word_dot(module, word, [emu._pack(lo, hi) for lo, hi in xs]) == exact


@pytest.mark.parametrize("name", MODULES)
def test_decode_rounding_stays_within_fp16(name: str) -> None:
    """Normal x (fp16 values): the error of the 4-product fp16 partial is a few fp16 ulps of the sum of |terms|."""
    emu, module = _emulator(), _idea(name)
    rng = np.random.default_rng(3)
    for _ in range(300):
        word = int(rng.integers(0, 2**32))
        xs = rng.standard_normal((4, 2)).astype(np.float16).astype(np.float64)
        terms = [((word >> 4 * a & 0xF) - 8) * xs[a, 0] for a in range(4)]
        terms += [((word >> (16 + 4 * a) & 0xF) - 8) * xs[a, 1] for a in range(4)]
        got = 16 * _word_dot(module, word, [emu._pack(xs[a, 0], xs[a, 1]) for a in range(4)])
        assert abs(got - sum(terms)) <= 8 * 2.0**-11 * sum(abs(t) for t in terms) + 1e-6


@pytest.mark.parametrize("name", MODULES)
def test_decode_has_teeth(name: str) -> None:
    """Swapping the x pairs of nibbles 0/4 and 1/5 changes the result (the exact check can fail)."""
    emu, module = _emulator(), _idea(name)
    pairs = [emu._pack(a + 1.0, 0.0) for a in range(4)]
    good = _word_dot(module, 0xFEDCBA98, pairs)
    pairs[0], pairs[1] = pairs[1], pairs[0]
    assert _word_dot(module, 0xFEDCBA98, pairs) != good


def test_x_pack_puts_the_first_value_low() -> None:
    emu = _emulator()
    for name in MODULES:
        out = emu.run_ptx(_idea(name)._PACK_F16X2_PTX.value, {1: 1.5, 2: -2.0})
        assert out[0] == emu._pack(1.5, -2.0)


@pytest.mark.slow
def test_twin_path_with_several_groups_per_split() -> None:
    """Interpreter: splits of 3 and 4 groups (the per-split x sums), 2 k tiles per group, inner_k_tiles 2 and 4."""
    script = f"""
import torch
import check_variants as cv
from kernels.int4_gemv import dequantize_groups, quantize_groups
torch.manual_seed(0)
for m, n, k, group, ikt in [(1, 96, 4096, 128, 8), (2, 64, 2048, 256, 4), (1, 72, 3072, 128, 2)]:
    x, w = torch.randn(m, k).to(torch.bfloat16), torch.randn(n, k)
    q, scales, zeros = quantize_groups(w, group)
    sz = torch.stack([scales, zeros], -1).transpose(0, 1).contiguous()
    ref = x.float() @ dequantize_groups(q, scales, zeros, group).t()
    for name in cv.variant_index("int4_gemv"):
        if name.startswith({MODULES!r}):
            out = cv.variant_kernel("int4_gemv", name)(x, cv.pack_tinygemm_reference(q, ikt), sz, group_size=group)
            print(name, k, cv.compare(out, ref, "int4_gemv", "cpu")[0])
"""
    proc = run_interpreted(script, timeout_s=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert len(rows) >= 3 * 2, proc.stdout
    assert all(row[-1] == "True" for row in rows), proc.stdout
