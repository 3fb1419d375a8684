"""Which Triton config torch.compile's autotuner picks for the rmsnorm and softmax baselines (H200).

Usage (device, repo root): python3 lab/benchmarks/device/inductor_configs.py OUT.json

Compiles each baseline at its manifest headline (4096x8192 bf16) in a fresh Inductor cache, calls it once, and
writes, per target, every Inductor kernel it launched with the config its launcher runs (block sizes, num_warps,
num_stages, as Inductor's `CachingAutotuner` holds them after autotuning) and the `.best_config` files the cache
keeps: the settings `lab/speedrun/rmsnorm/two_pass_l2.py` and the softmax modules can copy.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="hk_inductor_")
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch._inductor.runtime import triton_heuristics  # noqa: E402

from kernels.rmsnorm import rms_norm  # noqa: E402
from kernels.softmax import softmax  # noqa: E402

LAUNCHED: list[dict] = []
_run = triton_heuristics.CachingAutotuner.run


def _recording_run(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    """CachingAutotuner.run, then note the kernel and the config of the launcher it used."""
    result = _run(self, *args, **kwargs)
    config = self.launchers[0].config
    LAUNCHED.append({"kernel": self.fn.__name__, "kwargs": dict(config.kwargs), "num_warps": config.num_warps,
                     "num_stages": config.num_stages, "launchers": len(self.launchers),
                     "configs_tried": len(self.configs or [])})
    return result


def main() -> None:
    triton_heuristics.CachingAutotuner.run = _recording_run
    x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
    report = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    for name, fn, args, kwargs in (("rmsnorm", rms_norm, (x, w), {"eps": 1e-6}),
                                   ("softmax", softmax, (x,), {"dim": -1})):
        LAUNCHED.clear()
        compiled = torch.compile(fn)
        for _ in range(3):
            compiled(*args, **kwargs)
        torch.cuda.synchronize()
        report[name] = {"launched": list({json.dumps(row, sort_keys=True): row for row in LAUNCHED}.values())}
    cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    report["best_configs"] = {str(path.relative_to(cache)): json.loads(path.read_text())
                              for path in sorted(cache.rglob("*.best_config"))}
    Path(sys.argv[1]).write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
