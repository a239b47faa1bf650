"""Real CPU reports for the size model: nsys 2023.4.4 (--trace=nvtx,osrt) on the NVTX step
program of the tests, for several capture lengths. Writes cpu.csv.

    python bench/calibration/measure_cpu.py NSYS   # NSYS: the unpacked 2023.4.4 nsys
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = HERE.parent.parent / "tests" / "workloads" / "nvtx_steps.py"


def main() -> int:
    nsys = sys.argv[1]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for steps in (10, 40, 160):
            output = Path(work) / f"cpu-{steps}"
            start = time.perf_counter()
            subprocess.run(
                [
                    nsys,
                    "profile",
                    "--trace=nvtx,osrt",
                    "--sample=none",
                    "--cpuctxsw=none",
                    "--force-overwrite=true",
                    f"--output={output}",
                    sys.executable,
                    str(PROGRAM),
                    f"--steps={steps}",
                    "--step-seconds=0.05",
                    f"--marker-dir={work}",
                ],
                check=True,
                capture_output=True,
                env={"SLURM_PROCID": "0", "PATH": "/usr/bin"},
            )
            wall = time.perf_counter() - start
            size = output.with_suffix(".nsys-rep").stat().st_size
            # Each step is 0.05 s of work plus a 2 ms sleep (one traced OS call).
            rows.append(
                {
                    "report": f"cpu-nvtx-osrt-{steps}-steps",
                    "nsys": "2023.4.4",
                    "traced": "nvtx,osrt",
                    "seconds": round(steps * 0.052, 3),
                    "kernels": 0,
                    "gpu_metrics": 0,
                    "bytes": size,
                    "wall_s": round(wall, 1),
                }
            )
    with (HERE / "cpu.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print((HERE / "cpu.csv").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
