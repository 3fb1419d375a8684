"""The adversarial table: one candidate file per cheat family, with the status and check it must produce.

Reusable: ``from adversarial.cases import CASES`` gives (file, expected status, accepted check names); the
files live in ``candidates/``. ``untouched`` means the candidate exactly as ``render`` creates it. A case
whose memory contents are up to the allocator lists every check that may legitimately fire first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str  # candidates/<name>.py, or "untouched" for the rendered candidate
    status: str  # "ok" | "incorrect" | "invalid"
    checks: tuple[str, ...]  # the reason must start with one of these ("" for ok)
    timeout_s: float = 120.0
    family: str = ""
    problem: str = ""  # a key of PROBLEMS: the case's target is that problem file (its untouched candidate)

    @property
    def is_control(self) -> bool:
        return self.status == "ok" or self.name == "zeros"


# Problem files some cases run as their target instead of ``rms`` (a KernelBench Model: inputs, then ``state``).
PROBLEMS: dict[str, str] = {
    "dropout": """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.5)

    def forward(self, x):
        return self.drop(x * 2)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
""",
}

CASES: tuple[Case, ...] = (
    Case("untouched", "ok", (), family="control: the rendered candidate"),
    Case("untouched_inline", "ok", (), family="control: an honest rewrite"),
    Case("zeros", "incorrect", ("outputs_match_reference",), family="control: zeros"),
    Case("never_written", "incorrect", ("output_not_nan", "outputs_match_reference"), family="output never written"),
    Case("partly_written", "incorrect", ("output_not_nan", "outputs_match_reference"), family="output partly written"),
    Case("inputs_zeroed", "incorrect", ("inputs_unchanged",), family="inputs mutated in place"),
    Case("inputs_mutated_quietly", "incorrect", ("inputs_unchanged",), family="inputs mutated in place"),
    Case("return_input", "incorrect", ("outputs_match_reference",), family="input returned"),
    Case("return_view", "incorrect", ("outputs_match_reference",), family="view of the input returned"),
    Case("return_constant", "incorrect", ("outputs_match_reference",), family="constant returned"),
    Case("return_mean", "incorrect", ("outputs_match_reference",), family="mean returned"),
    Case("nan_output", "incorrect", ("output_not_nan",), family="NaN output"),
    Case("inf_output", "incorrect", ("output_not_nan",), family="inf output"),
    Case("wrong_dtype", "incorrect", ("output_shape_dtype",), family="dtype differs"),
    Case("wrong_shape", "incorrect", ("output_shape_dtype",), family="shape differs"),
    Case("patch_allclose", "invalid", ("functions_unpatched",), family="comparison patched"),
    Case("patch_isclose_equal", "invalid", ("functions_unpatched",), family="comparison patched"),
    Case("patch_assert_close", "invalid", ("functions_unpatched",), family="comparison patched"),
    Case("patch_perf_counter", "invalid", ("functions_unpatched",), family="timer patched"),
    Case("patch_elapsed_time", "invalid", ("functions_unpatched",), family="timer patched"),
    Case("patch_contract", "invalid", ("functions_unpatched",), family="the contract's own timer patched"),
    Case("cache_by_pointer", "incorrect", ("timed_outputs_match_reference",), family="cached by pointer"),
    Case("honest_then_stale", "incorrect", ("timed_outputs_match_reference",), family="honest, then stale"),
    Case("lower_precision", "incorrect", ("outputs_match_reference",), family="precision lowered"),
    Case("print_forged_json", "invalid", ("single_protocol_line",), family="forged JSON line printed"),
    Case("forge_protocol_fd", "invalid", ("single_protocol_line",), family="forged protocol line"),
    Case("early_exit", "invalid", ("single_protocol_line",), family="early exit after a forged line"),
    Case("exit_at_import", "invalid", ("import_failed",), family="early exit at import"),
    Case("edit_baseline", "invalid", ("baseline_unchanged",), family="generated baseline edited"),
    Case("edit_contract", "invalid", ("contract_unchanged",), family="contract edited"),
    Case("leftover_process", "invalid", ("no_leftover_processes",), family="process left running"),
    Case("leftover_daemon", "invalid", ("no_leftover_processes",), family="daemon left running"),
    Case("raises", "invalid", ("crashed",), family="kernel raises"),
    Case("segfault", "invalid", ("crashed",), family="kernel dies of a signal"),
    Case("hangs", "invalid", ("timeout",), timeout_s=6.0, family="kernel hangs"),
    Case("import_error", "invalid", ("import_failed",), family="candidate does not import"),
    Case(
        "memo_strided_sample",
        "incorrect",
        ("timed_outputs_match_reference",),
        family="outputs memoized under a strided sample of the input",
    ),
    Case(
        "setsid_env_cleared",
        "invalid",
        ("no_leftover_processes",),
        family="daemon in a new session with an empty environment",
    ),
    Case(
        "fake_compile_worker",
        "invalid",
        ("no_leftover_processes",),
        family="a look-alike of torch's compile worker pool",
    ),
    Case(
        "pool_threads_env",
        "invalid",
        ("no_leftover_processes",),
        family="compile threads raised again, a child kept alive",
    ),
    Case(
        "patch_after_dynamo",
        "invalid",
        ("functions_unpatched",),
        family="torch.manual_seed wrapped after Dynamo's own wrapper",
    ),
    Case(
        "patch_seed_lookalike",
        "invalid",
        ("functions_unpatched",),
        family="torch.manual_seed replaced by a copy of Dynamo's wrapper with globals of its own",
    ),
    Case(
        "compiled_zeros",
        "incorrect",
        ("outputs_match_reference", "relative_error_norm", "output_carries_signal"),
        timeout_s=300.0,
        family="torch.compile of a wrong function",
    ),
    Case("compiled_honest", "ok", (), timeout_s=300.0, family="control: torch.compile (Inductor)"),
    Case("tensor_subclass", "invalid", ("output_plain_tensor",), family="a Tensor subclass that agrees with anything"),
    Case(
        "untouched",
        "invalid",
        ("reference_deterministic",),
        family="a reference that draws random numbers (dropout in training mode)",
        problem="dropout",
    ),
)

CHEATS = tuple(case for case in CASES if not case.is_control)
