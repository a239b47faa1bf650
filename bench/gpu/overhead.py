"""Third GPU run: step time outside the window, the generated job against the same nsys command
run directly, back to back, with every step's time kept (bench/gpu/device.sh overhead)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prove import NSYS, OUT, ROOT, run_job  # noqa: E402

SCRIPT = ROOT / "work/tests/workloads/gpu_train.py"
FLAGS = [
    "--trace=cuda,nvtx",
    "--sample=none",
    "--cpuctxsw=none",
    "--capture-range=cudaProfilerApi",
    "--capture-range-end=stop",
    "--cuda-event-trace=false",
    "--force-overwrite=true",
]
WINDOW = {
    "NSYSGEN_PROFILE_FIRST_STEP": "40",
    "NSYSGEN_PROFILE_LAST_STEP": "44",
    "NSYSGEN_PROFILE_RANKS": "0",
}


def steps(path: Path) -> list[float]:
    return [round(t * 1000, 2) for t in json.loads(path.read_text())["step_seconds"]]


def main() -> int:
    results: dict[str, dict[str, list[list[float]]]] = {}
    for shape in ("compute", "launch"):
        runs: dict[str, list[list[float]]] = {
            "no nsys": [],
            "nsys direct": [],
            "generated job.sbatch": [],
        }
        for round_ in range(2):
            timing = ROOT / f"ov-{shape}-{round_}.json"
            program = [
                sys.executable,
                str(SCRIPT),
                f"--shape={shape}",
                "--steps=80",
                f"--timing-out={timing}",
            ]
            subprocess.run(program, check=True, env={**os.environ, **WINDOW})
            runs["no nsys"].append(steps(timing))
            subprocess.run(
                [NSYS, "profile", *FLAGS, f"--output=/tmp/ov-{shape}", *program],
                check=True,
                capture_output=True,
                env={**os.environ, **WINDOW},
            )
            runs["nsys direct"].append(steps(timing))
            name = f"steps-{shape}"
            assert run_job(name)["exit"] == 0
            runs["generated job.sbatch"].append(steps(ROOT / f"timing-{shape}-{name}.json"))
        results[shape] = runs
    medians = {
        shape: {
            kind: [
                statistics.median(t for i, t in enumerate(run) if i >= 5 and not 40 <= i <= 44)
                for run in runs_
            ]
            for kind, runs_ in runs.items()
        }
        for shape, runs in results.items()
    }
    (OUT / "overhead.json").write_text(
        json.dumps({"median_ms_outside_window": medians, "step_ms": results}, indent=1)
    )
    print(json.dumps(medians, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
