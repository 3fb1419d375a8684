"""What the rendered candidate says about ``kernel``'s parameters: one line per input (a tensor and its headline
shape, a destination buffer, a value a problem file makes, a KernelBench Model's ``state``), the mode rule and
the ``functional_call`` line for ``state``, and GPU MODE's one-line adapter from ``custom_kernel(data)``."""

from __future__ import annotations

import textwrap
from typing import Any

STATE_INPUT = "state"  # the final input of a KernelBench problem (hotkernel/contract/problems.py)
WIDTH = 112


def problem_format(resolved: dict[str, Any]) -> str | None:
    """``kernelbench`` (a problem file whose last input is the Model's bare ``state``), ``gpumode`` (any other
    problem file) or None (a function target)."""
    if "cases" not in resolved:
        return None
    last = resolved["inputs"][-1] if resolved["inputs"] else {}
    return "kernelbench" if last.get("name") == STATE_INPUT and last.get("shapes") is None else "gpumode"


def _item(name: str, text: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=f"  {name}: ", subsequent_indent="      ")


def _tensor_text(resolved: dict[str, Any], item: dict[str, Any], fmt: str | None) -> str:
    shape = "x".join(str(d) for d in item["shapes"][0]) or "0-d"
    if fmt == "gpumode":
        kind = f"a tensor of the dtype generate_input gives it, {shape} at the headline shape"
    elif fmt == "kernelbench":
        kind = f"{resolved['dtype']} tensor (an integer one keeps its dtype), {shape} at the headline shape"
    else:
        kind = f"{resolved['dtype']} tensor, {shape} at the headline shape"
    return f"{kind}, on {resolved['device']}"


OUTPUT_TEXT = (
    "a destination buffer: write the result into it and return it. It holds NaN (integer buffers: random "
    "values) before every judged call, so a buffer left untouched or written by an earlier call is incorrect."
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


def inputs_note(resolved: dict[str, Any]) -> str:
    """The candidate docstring's paragraph on ``kernel``'s parameters, in call order."""
    fmt = problem_format(resolved)
    outputs = set(resolved.get("outputs") or [])
    lines = ["Parameters, in call order:"]
    if resolved.get("derived_inputs"):
        raw = ", ".join(item["name"] for item in resolved["inputs"])
        for name in resolved["derived_inputs"]:
            lines.append(_item(name, f"a tensor the manifest's derive ({resolved['derive']}) makes from {raw}"))
    else:
        for item in resolved["inputs"]:
            name = item["name"]
            if item.get("shapes") is None:
                is_state = fmt == "kernelbench" and name == STATE_INPUT
                text = STATE_TEXT.replace("{dtype}", resolved["dtype"]) if is_state else MADE_TEXT
            else:
                text = _tensor_text(resolved, item, fmt)
            if name in outputs:
                text += "; " + OUTPUT_TEXT
            lines.append(_item(name, text))
    if fmt == "kernelbench":
        own = [item["name"] for item in resolved["inputs"][:-1]]
        args = "(" + ", ".join(own) + ("," if len(own) == 1 else "") + ")"
        lines += [
            "The baseline, which a kernel may call for any part it keeps (the problem file's Model, get_init_inputs):",
            '    with torch.device("meta"):',
            "        model = Model(*get_init_inputs())  # no memory: the tensors are in state",
            f"    torch.func.functional_call(model, state, {args})",
        ]
    if resolved.get("kwargs"):
        lines.append("The manifest's kwargs come as keyword arguments.")
    return "\n".join(lines)


def adapter_note(resolved: dict[str, Any]) -> str:
    """For a GPU MODE problem: the one line that makes a submission's ``custom_kernel(data)`` this ``kernel``."""
    if problem_format(resolved) != "gpumode":
        return ""
    if len(resolved["inputs"]) == 1:
        line = "kernel = custom_kernel"
        why = "data is the one input"
    else:
        line = "kernel = lambda *data: custom_kernel(tuple(data))  # noqa: E731"
        why = "the inputs are the items of data"
    return (
        "\n\n# GPU MODE's form: with a submission's custom_kernel(data) pasted above, this one line makes it the\n"
        f"# kernel ({why}):\n# {line}\n"
    )
