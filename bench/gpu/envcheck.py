"""Fourth GPU run: which part of the task environment slows the compute loop under nsys
(bench/gpu/device.sh envcheck)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import FLAGS, SCRIPT, WINDOW  # noqa: E402
from prove import NSYS, OUT, ROOT  # noqa: E402

SLURM = {
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_NODEID": "0",
    "SLURMD_NODENAME": "gpunode1",
    "SLURM_STEP_NUM_TASKS": "1",
    "SLURM_NTASKS": "1",
    "SLURM_JOB_ID": "7",
    "SLURM_JOB_NUM_NODES": "1",
}
TORCH = {
    "RANK": "0",
    "LOCAL_RANK": "0",
    "WORLD_SIZE": "1",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29511",
}
CASES = {
    "nsys, plain env": {},
    "nsys + SLURM_*": SLURM,
    "nsys + RANK/WORLD/MASTER": TORCH,
    "nsys + both": {**SLURM, **TORCH},
    "no nsys + both": {**SLURM, **TORCH},
}


def main() -> int:
    results: dict[str, float] = {}
    for name, extra in CASES.items():
        timing = ROOT / "env.json"
        program = [
            sys.executable,
            str(SCRIPT),
            "--shape=compute",
            "--steps=60",
            f"--timing-out={timing}",
        ]
        command = (
            program
            if name.startswith("no nsys")
            else [NSYS, "profile", *FLAGS, "--output=/tmp/envcheck", *program]
        )
        subprocess.run(
            command, check=True, capture_output=True, env={**os.environ, **WINDOW, **extra}
        )
        times = json.loads(timing.read_text())["step_seconds"]
        results[name] = round(
            statistics.median(t for i, t in enumerate(times) if i >= 5 and not 40 <= i <= 44)
            * 1000,
            2,
        )
        print(name, results[name], flush=True)
    (OUT / "envcheck.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
