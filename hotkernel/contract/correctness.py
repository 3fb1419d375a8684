"""Scale-aware correctness of a run's outputs against the reference (docs/correctness.md).

Three checks per call, each over every output: ``outputs_match_reference`` (elementwise
``|out - ref| <= atol + rtol |ref|``; integer and boolean outputs compared exactly), ``relative_error_norm``
(``||out - ref||_2 / ||ref||_2`` under a per-dtype bound) and ``output_carries_signal`` (the output varies
where the reference does and its Pearson correlation with the reference reaches a per-dtype bound). The last
two do not depend on the outputs' magnitude: an all-zero or constant output of a softmax (values ~1e-4) fails
them whatever atol is. Statistics are accumulated in fp64 on the outputs' device, in one Triton pass on a CUDA
device (``fused.py``) or one chunk at a time, so the extra memory is at most a few fp64 copies of one chunk and
only scalars come back to the host.

Stdlib only: torch is passed in. This file is vendored into the contract, so its names carry a prefix.
"""

from __future__ import annotations

import math
from typing import Any

from .fused import FUSED_SUMS, fused_error_sums
from .knobs import CheckFailed

# (atol, rtol) by target dtype, used when the target does not set them: the manifest's defaults.
CORRECTNESS_DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "bf16": (0.02, 0.02),
    "fp16": (2.5e-3, 2.5e-3),
    "fp32": (1e-4, 1e-4),
    "fp8_e4m3": (0.125, 0.125),
    "fp8_e5m2": (0.25, 0.25),
}
# Largest ||out - ref||_2 / ||ref||_2 by target dtype, set between the honest kernels and the op on inputs
# rounded through a narrower format (docs/correctness.md):
# bf16 honest <= 2.3e-3, fp8-rounded inputs >= 3.8e-2; fp16 honest <= 3.0e-4, bf16-rounded >= 2.3e-3;
# fp32 honest <= 3.3e-6, tf32-rounded >= 2.9e-4; fp8 targets: one fp8 rounding of the output (2.7e-2 e4m3,
# 5.1e-2 e5m2) stays 4x under.
CORRECTNESS_REL_L2_MAX: dict[str, float] = {
    "bf16": 1e-2,
    "fp16": 1.5e-3,
    "fp32": 3e-5,
    "fp8_e4m3": 0.1,
    "fp8_e5m2": 0.2,
}
# Smallest Pearson correlation of the output with the reference by target dtype: honest outputs reach
# 1 - 1e-5 or better (bf16), an output of another input set stays under 0.03.
CORRECTNESS_MIN_CORR: dict[str, float] = {
    "bf16": 0.99,
    "fp16": 0.999,
    "fp32": 0.9999,
    "fp8_e4m3": 0.9,
    "fp8_e5m2": 0.8,
}
# The norm bound never falls under this many times the error of the reference merely rounded to the output's
# dtype (an fp8 output of a bf16 target), and the correlation bound is relaxed to match (the square of it).
CORRECTNESS_ROUNDING_FACTOR = 4.0
# The bounds never fall under this many times the baseline's own error against the reference (measured by the
# judge on each shape's first set, in the target dtype): it only matters where the reference is near zero and the
# baseline's rounding noise is large beside it; an honest rewrite may be this much noisier than the baseline.
CORRECTNESS_BASELINE_FACTOR = 8.0
# Below this achievable correlation the output's dtype cannot carry the reference's variation (a large offset
# plus a small signal): the correlation check is skipped and says so.
CORRECTNESS_MIN_USEFUL_CORR = 0.5
# A reference whose standard deviation is under this fraction of its RMS is constant (fp32 noise is ~6e-8).
CORRECTNESS_FLAT_REL = 2.0**-20
# An output as flat as that is "constant where the reference varies" only when it also carries less than this
# share of the reference's standard deviation: else a reference just over the line and an honest output just
# under it (a BatchNorm running variance of 0.9 plus 1e-6 of signal: KernelBench level 3's 45_UNetSoftmax on an
# H100, 2026-12-06, std 8.59e-07 against the line's 8.58e-07) would fail the baseline itself. Such an output is
# judged by its correlation, like any other.
CORRECTNESS_FLAT_SHARE = 0.5
# Elements per chunk of the streamed statistics. The extra device memory is at most five fp64 buffers and a
# mask of one chunk, 41 bytes per chunk element: 1 << 22 elements is about 170 MiB. Override with
# check_outputs(chunk_elements=...).
CORRECTNESS_CHUNK_ELEMENTS = 1 << 22


def tolerances(dtype: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The bounds for a target: atol/rtol (the spec's when set, else by dtype), rel_l2_max and min_corr; with the
    spec's ``output_tolerances``, ``per_output`` too: each output's four bounds, those its entry leaves out the
    target's (outputs past the list take the target's)."""
    if dtype not in CORRECTNESS_DEFAULT_TOLERANCES:
        known = ", ".join(CORRECTNESS_DEFAULT_TOLERANCES)
        raise ValueError(f"correctness: unknown dtype {dtype!r}; use one of {known}")
    atol, rtol = CORRECTNESS_DEFAULT_TOLERANCES[dtype]
    defaults = {
        "atol": atol,
        "rtol": rtol,
        "rel_l2_max": CORRECTNESS_REL_L2_MAX[dtype],
        "min_corr": CORRECTNESS_MIN_CORR[dtype],
    }
    tol: dict[str, Any] = {
        key: float(spec[key]) if spec.get(key) is not None else value for key, value in defaults.items()
    }
    entries = spec.get("output_tolerances") or []
    if entries:
        target = dict(tol)
        tol["per_output"] = [
            {key: float(entry[key]) if entry.get(key) is not None else value for key, value in target.items()}
            for entry in entries
        ]
    return tol


def correctness_output_bounds(tol: dict[str, Any], index: int) -> dict[str, float]:
    """The four bounds of output ``index``: its ``per_output`` entry, else the target's."""
    per_output = tol.get("per_output") or []
    chosen = per_output[index] if index < len(per_output) else tol
    return {key: float(chosen[key]) for key in ("atol", "rtol", "rel_l2_max", "min_corr")}


def correctness_bounds_text(tol: dict[str, Any], keys: tuple[str, ...], count: int, fmt: str = ".3g") -> str:
    """``keys`` of the bounds of ``count`` outputs as a check's detail states them: ``atol=..., rtol=...`` where
    every output has the same, else each output's."""
    each = [correctness_output_bounds(tol, i) for i in range(max(count, 1))]

    def text(bounds: dict[str, float]) -> str:
        return ", ".join(f"{key}={bounds[key]:{fmt}}" for key in keys)

    if all(text(bounds) == text(each[0]) for bounds in each):
        return text(each[0])
    return "; ".join(f"output {i}: {text(bounds)}" for i, bounds in enumerate(each))


def correctness_pieces(shape: tuple[int, ...], chunk: int) -> list[tuple[Any, ...]]:
    """Index tuples that cover a tensor of this shape in views of at most ``chunk`` elements (rows first)."""
    numel = math.prod(shape)
    if numel <= chunk or not shape:
        return [()]
    if len(shape) == 1:
        return [(slice(start, start + chunk),) for start in range(0, shape[0], chunk)]
    row = math.prod(shape[1:])
    if row <= chunk:
        step = chunk // row
        return [(slice(start, start + step),) for start in range(0, shape[0], step)]
    inner = correctness_pieces(shape[1:], chunk)
    return [(index, *rest) for index in range(shape[0]) for rest in inner]


def correctness_statistics(
    torch: Any,
    out: Any,
    ref: Any,
    atol: float,
    rtol: float,
    chunk_elements: int = CORRECTNESS_CHUNK_ELEMENTS,
    floor: float = 0.0,
) -> dict[str, float]:
    """One output's error statistics against its reference, accumulated in fp64 on the output's device
    (``correctness_sums``: one fused pass on a CUDA device, else streamed in chunks).

    Keys: n, out_nonfinite, ref_nonfinite, max_abs_error, mismatches (elementwise, ``|out - ref| <= atol +
    rtol * max(|ref|, RMS(ref))``, never under ``floor``; exact for integer and boolean outputs), rel_l2 and
    rel_l2_rounded (||out - ref|| and ||round(ref) - ref|| over ||ref||, round = to the output's dtype),
    out_mean, ref_mean, out_rms, ref_rms, out_std, ref_std, corr (Pearson; NaN when either side is constant) and
    corr_rounded (what an output equal to the rounded reference would reach).
    """
    device = out.device
    exact = not (out.is_floating_point() or out.is_complex())
    if out.is_complex():
        out, ref = torch.view_as_real(out), torch.view_as_real(ref.to(out.dtype))
    ref = ref.to(device)
    pieces = correctness_pieces(tuple(out.shape), max(1, int(chunk_elements))) if out.numel() else []
    host, largest = correctness_sums(torch, out, ref, atol, rtol, pieces, exact)
    n = out.numel()
    scale = math.sqrt(max(host["r2"], 0.0) / n) if n and not exact else 0.0
    if not exact and host["matches"] < n and math.isfinite(scale) and (scale > 0 or floor > 0):
        host["matches"] = correctness_matches_at_scale(torch, out, ref, pieces, atol, rtol, scale, floor)
    stats = {
        "n": float(n),
        "out_nonfinite": 0.0,
        "ref_nonfinite": 0.0,
        "max_abs_error": largest,
        "mismatches": n - host["matches"],
    }
    if exact or n == 0:
        return stats
    if not all(math.isfinite(host[key]) for key in ("d2", "r2", "oo")):
        stats["out_nonfinite"], stats["ref_nonfinite"] = correctness_nonfinite(torch, out, ref, pieces)
    # products, not ``** 2``: a float power that overflows raises, a product is inf (an fp64 reference of a
    # recurrence that explodes reaches 1e160, GPU MODE's kda)
    mean_so, mean_sr = host["so"] / n, host["sr"] / n
    var_o = max(host["oo"] / n - mean_so * mean_so, 0.0)
    var_r = max(host["rr"] / n - mean_sr * mean_sr, 0.0)
    cov = host["or"] / n - mean_so * mean_sr
    ref_ss = host["r2"]
    mse_q = host["q2"] / n
    mean_o = mean_so + host["shift_o"]
    mean_r = mean_sr + host["shift_r"]
    stats.update(
        out_mean=mean_o,
        ref_mean=mean_r,
        out_rms=math.sqrt(var_o + mean_o * mean_o),
        ref_rms=math.sqrt(max(ref_ss, 0.0) / n),
        ref_std=math.sqrt(var_r),
        out_std=math.sqrt(var_o),
        rel_l2=math.sqrt(host["d2"] / ref_ss) if ref_ss > 0 else math.nan,
        rel_l2_rounded=math.sqrt(host["q2"] / ref_ss) if ref_ss > 0 else math.nan,
        corr=cov / math.sqrt(var_o * var_r) if var_o > 0 and var_r > 0 else math.nan,
        corr_rounded=math.sqrt(var_r / (var_r + mse_q)) if var_r > 0 else math.nan,
    )
    return stats


def correctness_sums(
    torch: Any, out: Any, ref: Any, atol: float, rtol: float, pieces: list[tuple[Any, ...]], exact: bool
) -> tuple[dict[str, float], float]:
    """The sums ``correctness_statistics`` is made of (``FUSED_SUMS``, plus the shifts of the moments) and the
    largest absolute error: in one Triton pass on a CUDA device (``fused_error_sums``), else chunk by chunk in
    torch. The shifts are the means of the first chunk (shifted moments keep the variance exact when the mean
    dominates)."""
    wide = torch.float64
    host = {"shift_o": 0.0, "shift_r": 0.0}
    if not exact and pieces:
        host["shift_o"] = float(out[pieces[0]].to(wide).mean().item())
        host["shift_r"] = float(ref[pieces[0]].to(wide).mean().item())
        if out.is_cuda:
            fused = fused_error_sums(torch, out, ref, atol, rtol, host["shift_o"], host["shift_r"])
            if fused is not None:
                return {**host, **fused[0]}, fused[1]
    zero = torch.zeros((), dtype=wide, device=out.device)
    sums = {key: zero.clone() for key in FUSED_SUMS}
    worst = zero.clone()
    for index in pieces:
        # Own fp64 copies of one chunk (copy=True even for fp64 data), so the in-place steps touch nothing else.
        o = out[index].to(wide, copy=True).reshape(-1)
        r = ref[index].to(wide, copy=True).reshape(-1)
        if exact:
            sums["matches"] += (o == r).sum()
            worst = torch.maximum(worst, (o - r).abs().max())
            continue
        q = torch.sub(r.to(out.dtype).to(wide), r)
        sums["q2"] += torch.dot(q, q)
        del q
        d = o - r
        error = d.abs()
        worst = torch.maximum(worst, error.max())
        sums["matches"] += (error <= r.abs().mul_(rtol).add_(atol)).sum()  # NaN never matches
        del error
        sums["d2"] += torch.dot(d, d)
        sums["r2"] += torch.dot(r, r)
        del d
        o.sub_(host["shift_o"])
        r.sub_(host["shift_r"])
        sums["so"] += o.sum()
        sums["sr"] += r.sum()
        sums["oo"] += torch.dot(o, o)
        sums["rr"] += torch.dot(r, r)
        sums["or"] += torch.dot(o, r)
    return {**host, **{key: float(value.item()) for key, value in sums.items()}}, float(worst.item())


def correctness_matches_at_scale(
    torch: Any,
    out: Any,
    ref: Any,
    pieces: list[tuple[Any, ...]],
    atol: float,
    rtol: float,
    scale: float,
    floor: float = 0.0,
) -> float:
    """Elements with ``|out - ref| <= max(atol + rtol * max(|ref|, scale), floor)`` (scale: the reference's RMS;
    floor: a multiple of the baseline's own largest error, ``check_outputs``).

    A second pass, run only when the plain elementwise rule found mismatches: an output that crosses zero inside
    a long reduction (an fp32 gemv: outputs of RMS 90, a few near 0) is judged at the output's own scale, not
    at ``atol`` alone. A wrong element still fails: its error is measured against the output's size."""
    wide = torch.float64
    matches = torch.zeros((), dtype=wide, device=out.device)
    for index in pieces:
        o = out[index].to(wide, copy=True).reshape(-1)
        r = ref[index].to(out.device).to(wide, copy=True).reshape(-1)
        bound = r.abs().clamp_(min=scale).mul_(rtol).add_(atol).clamp_(min=floor)
        matches += (o.sub_(r).abs_() <= bound).sum()  # NaN never matches
    return float(matches.item())


def correctness_nonfinite(torch: Any, out: Any, ref: Any, pieces: list[tuple[Any, ...]]) -> tuple[float, float]:
    """NaN/inf counts of the output and of the reference (a second pass, only when a sum came out non-finite)."""
    counts = [torch.zeros((), dtype=torch.int64, device=out.device) for _ in range(2)]
    for index in pieces:
        counts[0] += out[index].numel() - torch.isfinite(out[index]).sum()
        counts[1] += ref[index].numel() - torch.isfinite(ref[index]).sum()
    return float(counts[0].item()), float(counts[1].item())


def correctness_flat(std: float, rms: float) -> bool:
    """Whether values with this standard deviation and RMS are constant up to fp32 noise (all zeros too)."""
    return std <= CORRECTNESS_FLAT_REL * rms


def check_outputs(
    torch: Any, outs: list[Any], refs: list[Any], tol: dict[str, float], *, chunk_elements: int | None = None
) -> list[dict[str, Any]]:
    """The three checks over every output, each at its own bounds (``correctness_output_bounds``); each
    {"name", "ok", "detail", "max_abs_error"}."""
    chunk = int(chunk_elements or CORRECTNESS_CHUNK_ELEMENTS)
    baseline = list(tol.get("baseline") or [])
    if len(outs) != len(refs):
        detail = f"{len(outs)} outputs, the reference returns {len(refs)}"
        return [{"name": "outputs_match_reference", "ok": False, "detail": detail, "max_abs_error": None}]
    elementwise: list[str] = []
    norm: list[str] = []
    signal: list[str] = []
    notes: list[str] = []
    worst, worst_rel, least_corr, any_float = 0.0, 0.0, 1.0, False
    for i, (out, ref) in enumerate(zip(outs, refs, strict=False)):
        bounds = correctness_output_bounds(tol, i)
        atol, rtol = bounds["atol"], bounds["rtol"]
        floor = correctness_floor(baseline[i] if i < len(baseline) else None)
        stats = correctness_statistics(torch, out, ref, atol, rtol, chunk, floor)
        if i < len(baseline) and "rel_l2" in stats:
            correctness_admit_baseline(stats, baseline[i])
        n, mismatches = int(stats["n"]), int(stats["mismatches"])
        worst = max(worst, stats["max_abs_error"]) if math.isfinite(stats["max_abs_error"]) else math.inf
        if "rel_l2" not in stats:
            if mismatches:
                elementwise.append(
                    f"output {i}: {mismatches} of {n} elements differ from the reference "
                    f"({out.dtype}, compared exactly; max abs error {stats['max_abs_error']:.4g})"
                )
            continue
        any_float = True
        if stats["out_nonfinite"]:
            bad = f"output {i}: {int(stats['out_nonfinite'])} of {n} elements are NaN or inf"
            elementwise.append(bad)
            norm.append(bad)
            signal.append(bad)
            continue
        if stats["ref_nonfinite"]:
            elementwise.append(
                f"output {i}: the reference itself is not finite ({int(stats['ref_nonfinite'])} elements)"
            )
            continue
        if mismatches:
            own = floor / CORRECTNESS_BASELINE_FACTOR
            allowed = f"; or {CORRECTNESS_BASELINE_FACTOR:g}x the baseline's own {own:.3g}"
            elementwise.append(
                f"output {i}: {mismatches} of {n} elements differ from the reference "
                f"(max abs error {stats['max_abs_error']:.4g}; atol={atol}, rtol={rtol} of max(|ref|, "
                f"RMS(ref) {stats['ref_rms']:.3g}){allowed if floor > 0 else ''})"
            )
        norm_problem, norm_note = correctness_norm(i, stats, bounds["rel_l2_max"], out.dtype)
        signal_problem, signal_note = correctness_signal(i, stats, bounds["min_corr"], out.dtype)
        norm += [norm_problem] if norm_problem else []
        signal += [signal_problem] if signal_problem else []
        notes += [note for note in (norm_note, signal_note) if note]
        if math.isfinite(stats["rel_l2"]):
            worst_rel = max(worst_rel, stats["rel_l2"])
        if math.isfinite(stats["corr"]):
            least_corr = min(least_corr, stats["corr"])
    suffix = "".join(f"; {note}" for note in notes)
    checks = [
        {
            "name": "outputs_match_reference",
            "ok": not elementwise,
            "detail": elementwise[0]
            if elementwise
            else (
                f"every output within {correctness_bounds_text(tol, ('atol', 'rtol'), len(outs), 'g')} (integer and "
                "boolean outputs exactly); "
                f"max abs error {worst:.3g}"
            ),
            "max_abs_error": worst,
        }
    ]
    if any_float:
        checks.append(
            {
                "name": "relative_error_norm",
                "ok": not norm,
                "detail": norm[0]
                if norm
                else (
                    f"largest ||out - ref||_2 / ||ref||_2 {worst_rel:.3g} "
                    f"({correctness_bounds_text(tol, ('rel_l2_max',), len(outs))}){suffix}"
                ),
                "max_abs_error": None,
            }
        )
        checks.append(
            {
                "name": "output_carries_signal",
                "ok": not signal,
                "detail": signal[0]
                if signal
                else (
                    f"smallest correlation with the reference {least_corr:.6g} "
                    f"({correctness_bounds_text(tol, ('min_corr',), len(outs), '.6g')}){suffix}"
                ),
                "max_abs_error": None,
            }
        )
    return checks


def correctness_baseline_error(torch: Any, outs: list[Any], refs: list[Any]) -> list[list[float]]:
    """Per output, ``[rel_l2, corr, max_abs_error]`` of the baseline's own outputs (in the target dtype) against
    the wide reference: the error an honest implementation has at this output's scale (NaN where undefined)."""
    found = []
    for out, ref in zip(outs, refs, strict=False):
        if not (out.is_floating_point() or out.is_complex()) or out.shape != ref.shape:
            found.append([math.nan, math.nan, math.nan])
            continue
        stats = correctness_statistics(torch, out, ref, 0.0, 0.0)
        found.append([stats.get("rel_l2", math.nan), stats.get("corr", math.nan), stats["max_abs_error"]])
    return found


def correctness_floor(baseline: list[float] | None) -> float:
    """The elementwise tolerance never falls under CORRECTNESS_BASELINE_FACTOR times the baseline's own largest
    error on this output (an fp32 network 100 layers deep is 2.6e-4 off its fp64 reference, over atol), so an
    honest rewrite as accurate as the baseline passes; bf16 arithmetic, ~1e-2 off, still fails. 0 when unknown."""
    worst = baseline[2] if baseline is not None and len(baseline) > 2 else math.nan
    return CORRECTNESS_BASELINE_FACTOR * worst if math.isfinite(worst) and worst > 0 else 0.0


def correctness_admit_baseline(stats: dict[str, float], baseline: list[float]) -> None:
    """Record the baseline's own error (``rel_l2_baseline``, ``corr_baseline``): the bounds never fall under
    CORRECTNESS_BASELINE_FACTOR times it. A reference near zero (the mean of normalised values, ~1e-8 of its
    inputs' scale) is mostly the rounding noise of its intermediates, so even the baseline is far from it in
    relative terms; a wrong output still fails, its error being measured against the baseline's."""
    stats["rel_l2_baseline"], stats["corr_baseline"] = float(baseline[0]), float(baseline[1])


def correctness_norm(index: int, stats: dict[str, float], bound: float, dtype: Any) -> tuple[str | None, str | None]:
    """(problem, note) of the relative-error-norm check for one floating output."""
    if not stats["ref_rms"] > 0:
        return None, f"output {index}: the reference is all zeros, so only the elementwise check judges it"
    limit = correctness_norm_bound(stats, bound)
    if stats["rel_l2"] <= limit:
        return None, None
    why = (
        f"rel_l2_max {bound:.3g}"
        if limit == bound
        else "the baseline's own error or the reference rounded to the output dtype, times their factors"
    )
    return f"output {index}: ||out - ref||_2 / ||ref||_2 = {stats['rel_l2']:.3g} > {limit:.3g} ({why})", None


def correctness_norm_bound(stats: dict[str, float], rel_l2_max: float) -> float:
    """The norm bound for one output: rel_l2_max, or the rounding-factor times the output dtype's own error, or
    the baseline factor times the baseline's own error (when known), whichever is largest."""
    bound = max(rel_l2_max, CORRECTNESS_ROUNDING_FACTOR * stats["rel_l2_rounded"])
    baseline = stats.get("rel_l2_baseline", math.nan)
    return max(bound, CORRECTNESS_BASELINE_FACTOR * baseline) if math.isfinite(baseline) else bound


def correctness_corr_bound(stats: dict[str, float], min_corr: float) -> float:
    """The correlation bound for one output: min_corr, relaxed to what the output's dtype can reach and to what
    the baseline itself reaches (a baseline whose correlation is undefined relaxes it entirely)."""
    bound = min(min_corr, 1.0 - CORRECTNESS_ROUNDING_FACTOR**2 * (1.0 - stats["corr_rounded"]))
    if "corr_baseline" not in stats:
        return bound
    corr = stats["corr_baseline"] if math.isfinite(stats["corr_baseline"]) else 0.0
    return min(bound, 1.0 - CORRECTNESS_BASELINE_FACTOR**2 * (1.0 - corr))


def correctness_signal(
    index: int, stats: dict[str, float], min_corr: float, dtype: Any
) -> tuple[str | None, str | None]:
    """(problem, note) of the output-carries-signal check for one floating output."""
    if correctness_flat(stats["ref_std"], stats["ref_rms"]):
        return None, (
            f"output {index}: the reference is constant ({stats['ref_mean']:.4g}), so correlation is undefined "
            "and only the elementwise check judges it"
        )
    bound = correctness_corr_bound(stats, min_corr)
    if bound < CORRECTNESS_MIN_USEFUL_CORR:
        return None, (
            f"output {index}: {dtype} cannot carry the reference's variation (std {stats['ref_std']:.3g} on RMS "
            f"{stats['ref_rms']:.3g}), so correlation is not judged"
        )
    if correctness_flat(stats["out_std"], stats["out_rms"]) and not (
        stats["out_std"] >= CORRECTNESS_FLAT_SHARE * stats["ref_std"] and math.isfinite(stats["corr"])
    ):
        return (
            f"output {index} is constant ({stats['out_mean']:.4g}) where the reference varies "
            f"(std {stats['ref_std']:.3g})"
        ), None
    if stats["corr"] >= bound:
        return None, None
    return f"output {index}: correlation with the reference {stats['corr']:.4g} < {bound:.4g}", None


def check_output_tolerances(tol: dict[str, Any], outputs: int) -> None:
    """The target's ``output_tolerances`` name no more outputs than the baseline returns."""
    listed = len(tol.get("per_output") or [])
    if listed > outputs:
        raise CheckFailed(
            "output_tolerances_fit_outputs",
            f"hotkernel.yaml's output_tolerances lists {listed} entries and the baseline returns {outputs} "
            f"output(s); remove the entries past output {outputs - 1} (one entry per output, in return order)",
        )
