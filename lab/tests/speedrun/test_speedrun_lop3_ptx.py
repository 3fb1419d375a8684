"""The inline PTX of the `lop3` / `lop3w2` int4 GEMV candidates decodes tinygemm's nibbles in the right order, on CPU.

Inline PTX cannot run in the Triton interpreter (the CPU test runs those kernels' pure-Triton twin path), so
this test executes the PTX text itself with a small emulator of the few instructions it uses (lop3, shr,
fp16x2 sub/mul/fma with one rounding each, cvt, add.f32, mov pack/unpack). With x values that make every
fp16 product and partial sum exact, the emulated result must equal sum_p (q_p - 8) x_p exactly; a wrong nibble
position, a wrong x pair or a wrong constant changes it.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import re
from pathlib import Path
from types import ModuleType

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("torch")
pytest.importorskip("triton")

INT4_DIR = Path(__file__).resolve().parents[3] / "lab" / "speedrun" / "int4_gemv"
MASK32 = 0xFFFFFFFF


@functools.cache
def _load(name: str) -> ModuleType:
    """One idea module of lab/speedrun/int4_gemv/, imported once."""
    spec = importlib.util.spec_from_file_location(f"lop3_ptx_{name}", INT4_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _halves(value: int) -> tuple[float, float]:
    packed = np.array([value & 0xFFFF, value >> 16], dtype=np.uint16)
    low, high = packed.view(np.float16)
    return float(low), float(high)


def _pack(low: float, high: float) -> int:
    bits = np.array([low, high], dtype=np.float16).view(np.uint16)
    return int(bits[0]) | int(bits[1]) << 16


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    out = 0
    for i in range(8):
        if lut >> i & 1:
            out |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return out & MASK32


def run_ptx(ptx: str, operands: dict[int, int | float]) -> dict[int, int | float]:
    """Execute the inline-PTX text; operands maps $n to raw bits (b32, or b64 for `mov.b64 {..}, $n`), or to
    a float for an `f` operand."""
    regs: dict[str, int | float] = {f"${n}": v for n, v in operands.items()}

    def value(token: str) -> int:
        token = token.strip()
        if token.startswith("0x"):
            return int(token, 16)
        if token.isdigit():
            return int(token)
        return int(regs[token])

    for raw in ptx.splitlines():
        line = raw.strip().rstrip(";")
        if not line or line in "{}" or line.startswith(".reg"):
            continue
        op, _, rest = line.partition(" ")
        if op in ("mov.b64", "mov.b32") and rest.startswith("{"):
            names, src = rest.split("}")
            names = [n.strip() for n in names.strip("{").split(",")]
            bits = value(src.strip(", "))
            width = 64 // len(names) if op == "mov.b64" else 16
            for i, n in enumerate(names):
                regs[n] = bits >> (width * i) & ((1 << width) - 1)
            continue
        args = [a.strip() for a in rest.split(",")]
        if op == "mov.b32":
            regs[args[0]] = value(args[1])
        elif op == "lop3.b32":
            regs[args[0]] = _lop3(value(args[1]), value(args[2]), value(args[3]), value(args[4]))
        elif op == "shr.u32":
            regs[args[0]] = value(args[1]) >> value(args[2])
        elif op in ("sub.rn.f16x2", "mul.rn.f16x2", "fma.rn.f16x2"):
            a, b = _halves(value(args[1])), _halves(value(args[2]))
            c = _halves(value(args[3])) if op.startswith("fma") else (0.0, 0.0)
            if op.startswith("sub"):
                out = [a[i] - b[i] for i in range(2)]
            elif op.startswith("mul"):
                out = [a[i] * b[i] for i in range(2)]
            else:
                out = [a[i] * b[i] + c[i] for i in range(2)]  # exact in float64, one rounding to fp16 below
            regs[args[0]] = _pack(out[0], out[1])
        elif op == "cvt.f32.f16":
            regs[args[0]] = float(np.array([value(args[1])], np.uint16).view(np.float16)[0])
        elif op == "add.f32":
            regs[args[0]] = float(np.float32(regs[args[1]]) + np.float32(regs[args[2]]))
        elif op == "cvt.rn.f16x2.f32":
            regs[args[0]] = _pack(float(regs[args[2]]), float(regs[args[1]]))
        else:
            raise AssertionError(f"emulator: unknown instruction {line!r}")
    return {int(k[1:]): v for k, v in regs.items() if re.fullmatch(r"\$\d+", k)}


def _case(rng: random.Random, n_words: int, prescale: float) -> tuple[list[int], list[list[int]], float]:
    """Random words, x pairs (fp16x2 bits of x * prescale) per word and nibble pair, and the exact dot."""
    words, pairs, exact = [], [], 0.0
    for _ in range(n_words):
        word = rng.getrandbits(32)
        word_pairs = []
        for a in range(4):
            x_lo, x_hi = rng.randint(-4, 4), rng.randint(-4, 4)  # small integers: every fp16 step is exact
            word_pairs.append(_pack(x_lo * prescale, x_hi * prescale))
            exact += ((word >> 4 * a & 0xF) - 8) * x_lo + ((word >> (16 + 4 * a) & 0xF) - 8) * x_hi
        words.append(word)
        pairs.append(word_pairs)
    return words, pairs, exact


@pytest.mark.parametrize("variant", sorted(_load("lop3").VARIANTS))
def test_lop3_one_word_ptx_matches_nibble_order(variant: str) -> None:
    module = _load("lop3")
    prescale = module.VARIANTS[variant]["x_prescale"]
    rng = random.Random(0)
    for _ in range(200):
        words, pairs, exact = _case(rng, 1, prescale)
        out = run_ptx(module._DECODE_DOT_PTX.value, {1: words[0], **{2 + a: pairs[0][a] for a in range(4)}})
        assert out[0] / prescale == exact


@pytest.mark.parametrize("variant", sorted(_load("lop3w2").VARIANTS))
def test_lop3w2_two_word_ptx_matches_nibble_order(variant: str) -> None:
    module = _load("lop3w2")
    prescale = module.VARIANTS[variant]["x_prescale"]
    rng = random.Random(1)
    for _ in range(200):
        words, pairs, exact = _case(rng, 2, prescale)
        operands = {1: words[0] | words[1] << 32}  # little-endian int64: the even word in the low half
        operands.update({2 + 4 * i + a: pairs[i][a] for i in range(2) for a in range(4)})
        out = run_ptx(module._DECODE_DOT_PTX.value, operands)
        assert out[0] / prescale == exact


def test_emulator_has_teeth() -> None:
    """Swapping the x pairs of nibbles 0/4 and 1/5 changes the emulated result (the check can fail)."""
    module = _load("lop3w2")
    operands: dict[int, int | float] = {1: 0x76543210 | 0xFEDCBA98 << 32}
    operands.update({2 + 4 * i + a: _pack(0.015625 * (a + 1), 0.0) for i in range(2) for a in range(4)})
    good = run_ptx(module._DECODE_DOT_PTX.value, operands)[0]
    operands[2], operands[3] = operands[3], operands[2]
    assert run_ptx(module._DECODE_DOT_PTX.value, operands)[0] != good


def test_pack_f16x2_puts_the_first_value_low() -> None:
    module = _load("lop3")
    out = run_ptx(module._PACK_F16X2_PTX.value, {1: 1.5, 2: -2.0})
    assert out[0] == _pack(1.5, -2.0)
