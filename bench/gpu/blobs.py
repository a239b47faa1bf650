"""Fifth GPU run: does `nsys export --include-blobs true` carry NCCL's NVTX payload (the message
size) into SQLite? (bench/gpu/device.sh blobs)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prove import NSYS, OUT, reports, run_job  # noqa: E402


def main() -> int:
    assert run_job("nccl-allreduce")["exit"] == 0
    report = reports("nccl-allreduce")[0]
    target = OUT / "nccl-allreduce-blobs.sqlite"
    subprocess.run(
        [
            NSYS,
            "export",
            "--type",
            "sqlite",
            "--include-blobs",
            "true",
            "--force-overwrite",
            "true",
            "--output",
            str(target),
            str(report),
        ],
        check=True,
    )
    shutil.copy(report, OUT / "nccl-allreduce.nsys-rep")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
