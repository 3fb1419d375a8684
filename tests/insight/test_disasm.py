"""disasm: the Triton wheel's cuobjdump really disassembles the cubin captured on the H200 (no GPU needed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight.disasm import (
    disasm,
    find_cuobjdump,
    find_triton_kernel,
    memory_key,
    parse_res_usage,
    split_functions,
    summarise_sass,
    summary_lines,
    triton_bin_dir,
)

H200 = Path(__file__).parent.parent / "fixtures" / "h200"
CACHE = H200 / "triton_cache"
needs_cuobjdump = pytest.mark.skipif(find_cuobjdump() is None, reason="no cuobjdump (CUDA toolkit or triton wheel)")


def test_res_usage_captured_on_h200():
    usage = parse_res_usage((H200 / "cuobjdump_res_usage.out").read_text())
    assert usage == {
        "rmsnorm_kernel": {
            "REG": 64,
            "STACK": 0,
            "SHARED": 1024,
            "LOCAL": 0,
            "CONSTANT[0]": 576,
            "TEXTURE": 0,
            "SURFACE": 0,
            "SAMPLER": 0,
        }
    }


def test_summary_of_sass_captured_on_h200():
    functions = split_functions((H200 / "cuobjdump_sass.out").read_text())
    assert list(functions) == ["rmsnorm_kernel"]
    summary = summarise_sass(functions["rmsnorm_kernel"], {"REG": 64, "SHARED": 1024, "LOCAL": 0})
    # the kernel loads a bf16 row with 128-bit vector loads and stores with 128-bit stores
    assert summary.memory_ops["LDG.128"] == 8 and summary.memory_ops["STG.128"] == 4
    assert summary.matrix_ops == {}  # HFMA2.MMA is not a tensor-core instruction
    assert summary.local_loads == summary.local_stores == 0
    assert summary.barriers == {"BAR.SYNC.DEFER_BLOCKING": 2}
    assert summary.registers == 64 and summary.hints == []
    assert summary.instructions > 300


def test_memory_key_widths():
    assert memory_key("LDG.E.128.CONSTANT") == "LDG.128"
    assert memory_key("LDG.E") == "LDG.32"
    assert memory_key("STG.E.U16") == "STG.16"
    assert memory_key("LDS.64") == "LDS.64"
    assert memory_key("FMUL") is None


def test_spill_and_matrix_hints():
    lines = [
        "        /*0000*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;",
        "        /*0010*/              @!P0 STL [R1], R2 ;",
        "        /*0020*/                   LDL R3, [R1] ;",
        "        /*0030*/                   LDG.E R4, desc[UR6][R2.64] ;",
    ]
    summary = summarise_sass(lines, {"REG": 255, "LOCAL": 8})
    assert summary.matrix_ops == {"HGMMA.64x128x16.F32.BF16": 1}  # wgmma on Hopper, opcode kept whole
    assert summary.local_stores == 1 and summary.local_loads == 1
    assert any("spills" in h for h in summary.hints) and any("narrower than 128" in h for h in summary.hints)
    assert any("255 registers" in h for h in summary.hints)


def test_triton_bin_dir_found_without_importing_triton():
    import sys

    before = "triton" in sys.modules
    triton_bin_dir()
    assert ("triton" in sys.modules) == before


@needs_cuobjdump
def test_disasm_triton_cache_for_real(tmp_path):
    result = disasm("triton-cache", kernel="rmsnorm", max_lines=20, cache_dirs=[CACHE], out_path=tmp_path / "k.sass")
    assert result.kind == "sass" and result.kernel == "rmsnorm_kernel"
    assert result.summary.registers == 64 and result.summary.shared_bytes == 1024
    assert result.summary.triton_shared_bytes == 32 and result.summary.num_warps == 8
    assert result.summary.memory_ops["LDG.128"] == 8
    assert result.shown_lines == 20 and result.total_lines > 300 and "cut at 20" in result.note
    full = Path(result.full_listing).read_text()
    assert full.count("LDG.E.128") == 8
    # the listing matches what the H200's own cuobjdump printed for the same cubin
    captured = [line for line in (H200 / "cuobjdump_sass.out").read_text().splitlines() if "/*0" in line]
    assert [line for line in full.splitlines() if "/*0" in line][:50] == [
        line for line in captured if line.strip().startswith("/*0")
    ][:50]
    assert summary_lines(result)[0].startswith("SASS of rmsnorm_kernel")


@needs_cuobjdump
def test_disasm_cubin_path_and_env_cache(tmp_path, monkeypatch):
    cubin = next(CACHE.glob("*/rmsnorm_kernel.cubin"))
    result = disasm(str(cubin), max_lines=0)
    assert result.summary.num_warps == 8  # metadata json next to the cubin is picked up
    assert result.listing.count("\n") + 1 == result.total_lines and result.note is None
    monkeypatch.setenv("TRITON_CACHE_DIR", str(CACHE))
    assert find_triton_kernel("rmsnorm_kernel") == cubin


def test_ptx_from_the_cache():
    result = disasm("triton-cache", kernel="rmsnorm_kernel", ptx=True, max_lines=5, cache_dirs=[CACHE])
    assert result.kind == "ptx" and result.functions == ["rmsnorm_kernel"]
    assert result.ptx_summary["ld.global.v4"] == 8 and result.ptx_summary["st.global.v4"] == 4
    assert result.shown_lines == 5


@needs_cuobjdump
def test_non_cuda_binary_is_one_line(tmp_path):
    for target in (shutil.which("ls") or "/bin/ls", str(_text_file(tmp_path))):
        with pytest.raises(HotkernelError, match="not a CUDA binary") as info:
            disasm(target)
        assert "\n" not in str(info.value)


@needs_cuobjdump
def test_embedded_ptx_absent_from_cubin():
    cubin = next(CACHE.glob("*/rmsnorm_kernel.cubin"))
    with pytest.raises(HotkernelError, match="no embedded PTX"):
        disasm(str(cubin), ptx=True)


def test_bad_inputs(tmp_path):
    with pytest.raises(HotkernelError, match="not found"):
        disasm(str(tmp_path / "none.cubin"))
    empty = tmp_path / "cache"
    (empty / "abc").mkdir(parents=True)
    with pytest.raises(HotkernelError, match="holds no kernel yet"):
        disasm("triton-cache", cache_dirs=[empty])
    with pytest.raises(HotkernelError, match="cached kernels: rmsnorm_kernel"):
        disasm("triton-cache", kernel="softmax", cache_dirs=[CACHE])
    with pytest.raises(HotkernelError, match="no Triton cache"):
        disasm("triton-cache", kernel="x", cache_dirs=[tmp_path / "empty"])
    with pytest.raises(HotkernelError, match="does not look like PTX"):
        disasm(str(_text_file(tmp_path, ".ptx")))
    with pytest.raises(HotkernelError, match="max_lines"):
        disasm("triton-cache", kernel="rmsnorm_kernel", max_lines=-1, cache_dirs=[CACHE])


def _text_file(tmp_path: Path, suffix: str = ".bin") -> Path:
    path = tmp_path / f"plain{suffix}"
    path.write_text("hello, not a kernel\n")
    return path


def test_without_a_kernel_name_the_newest_cache_entry_is_taken(tmp_path):
    cubin = next(CACHE.glob("*/rmsnorm_kernel.cubin"))
    assert find_triton_kernel(None, [CACHE]) == cubin
    older = tmp_path / "old" / "other_kernel.cubin"
    older.parent.mkdir()
    older.write_bytes(b"x")
    os.utime(older, (1, 1))
    assert find_triton_kernel(None, [tmp_path, CACHE]) == cubin


@needs_cuobjdump
def test_other_builds_of_the_same_kernel_are_named(tmp_path):
    """Two cache entries of one kernel name (as two variants of one module leave): the newest is read, the other
    is named, since a build reused from the cache keeps its older file time."""
    entry = next(CACHE.glob("*/rmsnorm_kernel.cubin")).parent
    newer, older = tmp_path / "newer_hash", tmp_path / "older_hash"
    shutil.copytree(entry, newer)
    shutil.copytree(entry, older)
    for path in older.iterdir():
        os.utime(path, (1, 1))
    result = disasm("triton-cache", kernel="rmsnorm_kernel", max_lines=0, cache_dirs=[tmp_path])
    assert result.source == str(newer / "rmsnorm_kernel.cubin")
    assert result.other_builds == [str(older / "rmsnorm_kernel.cubin")]
    assert any("1 other build(s) of rmsnorm_kernel" in line and str(older) in line for line in summary_lines(result))
    alone = disasm("triton-cache", kernel="rmsnorm_kernel", max_lines=0, cache_dirs=[CACHE])
    assert alone.other_builds == [] and not any("other build" in line for line in summary_lines(alone))
