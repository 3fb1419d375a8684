"""``output_tolerances``: validated on one line naming the entry, carried by the resolved target and its SPEC
(so by the fingerprint), and resolved into each output's four bounds."""

from __future__ import annotations

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest_text, manifest_fingerprint, resolve_target

ENTRY = """version: 1
targets:
  t:
    from: torch.nn.functional:relu
    shapes: [1024]
    dtype: fp32
"""
TWO = "    output_tolerances: [{atol: 1.0e-2, rtol: 1.0e-2}, {min_corr: 0.5}]\n"


def load(extra: str = ""):
    return load_manifest_text(ENTRY + extra, check_files=False)


def test_each_entry_keeps_the_bounds_it_sets_and_the_rest_are_the_targets() -> None:
    target = resolve_target(load(TWO), "t")
    assert target.spec()["output_tolerances"] == [{"atol": 0.01, "rtol": 0.01}, {"min_corr": 0.5}]
    bounds = target.bounds()
    assert bounds["atol"] == 1e-4 and bounds["min_corr"] == 0.9999  # the target's (fp32 defaults)
    assert bounds["per_output"] == [
        {"atol": 0.01, "rtol": 0.01, "rel_l2_max": 3e-5, "min_corr": 0.9999},
        {"atol": 1e-4, "rtol": 1e-4, "rel_l2_max": 3e-5, "min_corr": 0.5},
    ]


def test_a_string_entry_reads_like_the_cli_option() -> None:
    spec = load("    output_tolerances: ['atol=1e-2,rel_l2_max=0.1', null]\n").targets["t"]
    assert spec.output_tolerances == [{"atol": 0.01, "rel_l2_max": 0.1}, {}]


def test_without_the_key_the_spec_and_fingerprint_are_as_before() -> None:
    target = resolve_target(load(), "t")
    assert "output_tolerances" not in target.spec() and "per_output" not in target.bounds()
    assert manifest_fingerprint(load("    output_tolerances: []\n"), "t") == target.fingerprint()


def test_a_changed_output_tolerance_changes_the_fingerprint() -> None:
    before = manifest_fingerprint(load(TWO), "t")
    assert manifest_fingerprint(load(TWO.replace("0.5", "0.6")), "t") != before
    assert manifest_fingerprint(load(), "t") != before


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[{atol: -1.0e-3}]", r"output_tolerances\[0\]: atol: -0.001 is out of range; give a number of 0 or more"),
        ("[{}, {rtol: abc}]", r"output_tolerances\[1\]: rtol: 'abc' is not a number; write e\.g\. rtol: 1e-3"),
        ("[{min_corr: 1.5}]", r"output_tolerances\[0\]: min_corr: 1\.5 is out of range; give a number between 0"),
        ("[{tol: 1}]", r"output_tolerances\[0\]: 'tol' is not a bound; write a mapping of atol, rtol"),
        ("[3]", r"output_tolerances\[0\]: 3 is not an output tolerance; write a mapping of atol"),
        ("{atol: 1}", r"output_tolerances: expected a list"),
        ("['atol']", r"output_tolerances\[0\]: 'atol' is not an output tolerance; write atol=1e-3,rtol=1e-3"),
    ],
)
def test_a_bad_entry_is_one_line_naming_it_and_the_fix(value: str, message: str) -> None:
    with pytest.raises(HotkernelError, match=r"hotkernel\.yaml:7: targets\.t\." + message) as caught:
        load(f"    output_tolerances: {value}\n")
    assert "\n" not in str(caught.value)
