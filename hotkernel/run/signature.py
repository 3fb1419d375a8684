"""What the rendered candidate says about ``kernel``'s parameters: one line per input (a tensor and its headline
shape, a destination buffer, a value a problem file makes, a KernelBench Model's ``state``), the mode rule and
the ``functional_call`` line for ``state``, and GPU MODE's one-line adapter from ``custom_kernel(data)``."""

from __future__ import annotations

import textwrap

from hotkernel.manifest.model import output_input
from hotkernel.manifest.resolved import ResolvedInput, ResolvedTarget

STATE_INPUT = "state"  # the final input of a KernelBench problem (hotkernel/contract/problems.py)
WIDTH = 112


def problem_format(target: ResolvedTarget) -> str | None:
    """``kernelbench`` (a problem file whose last input is the Model's bare ``state``), ``gpumode`` (any other
    problem file) or None (a function target)."""
    if not target.is_problem:
        return None
    last = target.inputs[-1] if target.inputs else None
    return "kernelbench" if last and last.name == STATE_INPUT and last.shapes is None else "gpumode"


def _item(name: str, text: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=f"  {name}: ", subsequent_indent="      ")


def _tensor_text(target: ResolvedTarget, shapes: list[list[int]], fmt: str | None) -> str:
    shape = "x".join(str(d) for d in shapes[0]) or "0-d"
    if fmt == "gpumode":
        kind = f"a tensor of the dtype generate_input gives it, {shape} at the headline shape"
    elif fmt == "kernelbench":
        kind = f"{target.dtype} tensor (an integer one keeps its dtype), {shape} at the headline shape"
    else:
        kind = f"{target.dtype} tensor, {shape} at the headline shape"
    return f"{kind}, on {target.device}"


NAN_FILLED = (
    "NaN (integer buffers: random values) before every judged call, so a buffer left untouched or written by an "
    "earlier call is incorrect."
)
OUTPUT_TEXT = "a destination buffer: write the result into it and return it. It holds " + NAN_FILLED
INSIDE_TEXT = "inside it, {paths} are destination buffers: write the results into them and return them. They hold "
ONE_ITEM_TEXT = (
    "; passed as generate_input returns it: where that is a tuple of this one tensor, the kernel receives the "
    "tuple (unpack it: (x,) = data), as GPU MODE's custom_kernel(data) does"
)
MADE_TEXT = (
    "made by the problem file and passed as it makes it: a Python scalar (a constant of the case) or a "
    "structure (tuple, list, dict, dataclass or config object) of tensors and constants."
)
STATE_TEXT = (
    "the Model's tensors as one dict {state_dict key: tensor}: named_parameters() then named_buffers() (e.g. "
    'state["fc.weight"]), made by the Model from the run\'s seed, floating ones in {dtype}. The Model runs in '
    "the mode its file builds it in (training mode for KernelBench, as KernelBench's harness runs it) for the "
    "baseline, the reference and this kernel alike: buffers the forward updates in place (BatchNorm's running "
    "statistics) must be updated here as there (they are judged like outputs); parameters must stay unchanged."
)


def _input_text(target: ResolvedTarget, item: ResolvedInput, fmt: str | None) -> str:
    """What one raw input is, as the kernel receives it."""
    if item.shapes is not None:
        text = _tensor_text(target, item.shapes, fmt)
        if fmt == "gpumode" and len(target.inputs) == 1:
            text += ONE_ITEM_TEXT
    elif fmt == "kernelbench" and item.name == STATE_INPUT:
        text = STATE_TEXT.replace("{dtype}", target.dtype)
    else:
        text = MADE_TEXT
    if item.name in target.outputs:
        return text + "; " + OUTPUT_TEXT
    inside = [entry[len(item.name) :] for entry in target.outputs if output_input(entry) == item.name]
    if len(inside) == 1:
        return f"{text.removesuffix('.')}; inside it, {inside[0]} is {OUTPUT_TEXT}"
    if inside:
        return text.removesuffix(".") + "; " + INSIDE_TEXT.format(paths=", ".join(inside)) + NAN_FILLED
    return text


def inputs_note(target: ResolvedTarget) -> str:
    """The candidate docstring's paragraph on ``kernel``'s parameters, in call order."""
    fmt = problem_format(target)
    lines = ["Parameters, in call order:"]
    if target.derived_inputs:
        raw = ", ".join(item.name for item in target.inputs)
        for name in target.derived_inputs:
            lines.append(_item(name, f"a tensor the manifest's derive ({target.derive}) makes from {raw}"))
    else:
        lines += [_item(item.name, _input_text(target, item, fmt)) for item in target.inputs]
    if fmt == "kernelbench":
        own = [item.name for item in target.inputs[:-1]]
        args = "(" + ", ".join(own) + ("," if len(own) == 1 else "") + ")"
        lines += [
            "The baseline, which a kernel may call for any part it keeps (the problem file's Model, get_init_inputs):",
            '    with torch.device("meta"):',
            "        model = Model(*get_init_inputs())  # no memory: the tensors are in state",
            f"    torch.func.functional_call(model, state, {args})",
        ]
    if target.kwargs:
        lines.append("The manifest's kwargs come as keyword arguments.")
    return "\n".join(lines)


def adapter_note(target: ResolvedTarget) -> str:
    """For a GPU MODE problem: the one line that makes a submission's ``custom_kernel(data)`` this ``kernel``."""
    if problem_format(target) != "gpumode":
        return ""
    if len(target.inputs) == 1:
        line = "kernel = custom_kernel"
        why = "data is the one input"
    else:
        line = "kernel = lambda *data: custom_kernel(tuple(data))  # noqa: E731"
        why = "the inputs are the items of data"
    return (
        "\n\n# GPU MODE's form: with a submission's custom_kernel(data) pasted above, this one line makes it the\n"
        f"# kernel ({why}):\n# {line}\n"
    )
