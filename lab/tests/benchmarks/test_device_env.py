"""lab/benchmarks/device/env.sh, which the device scripts source: the environment they run with, `gpu_csv`, and a stop
with one line when the wheels cannot be installed. Run here with a stand-in nvidia-smi."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEVICE = ROOT / "lab" / "benchmarks" / "device"


def _sandbox(tmp_path: Path) -> dict[str, str]:
    """A repository root with env.sh, and a PATH whose nvidia-smi prints its arguments and whose python3 is ours."""
    (tmp_path / "lab" / "benchmarks" / "device").mkdir(parents=True)
    shutil.copyfile(DEVICE / "env.sh", tmp_path / "lab" / "benchmarks" / "device" / "env.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text('#!/bin/sh\necho "nvidia-smi $*"\n')
    (bin_dir / "nvidia-smi").chmod(0o755)
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _run(tmp_path: Path, env: dict[str, str], script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f". lab/benchmarks/device/env.sh\n{script}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_env_exports_the_environment_and_gpu_csv_writes_the_card(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    script = 'gpu_csv one.csv\ngpu_csv two.csv name,memory.used\necho "$PYTHONPATH $HOTKERNEL_PYTHON"'
    done = _run(tmp_path, env, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"/tmp/site:{tmp_path} python3"
    assert (tmp_path / "one.csv").read_text() == ("nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,"
                                                  "clocks.mem,power.limit --format=csv\n")
    assert (tmp_path / "two.csv").read_text() == "nvidia-smi --query-gpu=name,memory.used --format=csv\n"


def test_a_wheel_that_does_not_install_stops_the_script(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl" / "broken-0.0-py3-none-any.whl").write_bytes(b"not a zip")
    done = _run(tmp_path, env, "echo reached")
    assert done.returncode == 1 and "reached" not in done.stdout


def test_a_python_without_the_packages_is_refused_in_one_line(tmp_path: Path) -> None:
    env = _sandbox(tmp_path)
    (tmp_path / "bin" / "python3").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "bin" / "python3").chmod(0o755)
    done = _run(tmp_path, env, "echo reached")
    assert done.returncode == 1 and "reached" not in done.stdout
    assert done.stderr.strip().splitlines() == [
        "env.sh: python3 lacks pydantic, ruamel.yaml or filelock and no .whl/ installs them: carry .whl/ with wheels "
        "of them and their dependencies for this python"]


def test_every_device_script_parses_and_installs_wheels_only_through_env_sh() -> None:
    """sync_gpus.sh keeps its own install, inside its device branch (its dry run on CPU installs nothing, and
    each GPU's sync runs in a copy of the tree with its own PYTHONPATH); capture_fixtures.sh only names the install
    in a comment."""
    for script in sorted(DEVICE.glob("*.sh")):
        parsed = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert parsed.returncode == 0, (script.name, parsed.stderr)
    installing = sorted(p.name for p in DEVICE.glob("*.sh")
                        if any("pip install" in line and not line.lstrip().startswith("#")
                               for line in p.read_text().splitlines()))
    assert installing == ["env.sh", "sync_gpus.sh"]
    # Every script that runs the tool sets up through env.sh; the exceptions are the round scripts of before env.sh
    # (kept as they ran), capture_step.sh (runs no python) and sync_gpus.sh (its own install, above).
    not_sourcing = sorted(p.name for p in DEVICE.glob("*.sh")
                          if p.name != "env.sh" and ". lab/benchmarks/device/env.sh" not in p.read_text())
    assert not_sourcing == ["batch_a.sh", "batch_b.sh", "batch_c2.sh", "capture_fixtures.sh", "capture_step.sh",
                            "sync_gpus.sh"], not_sourcing
