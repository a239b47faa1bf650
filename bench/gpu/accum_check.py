"""Reads the issue-15 report on the GPU machine (bench/gpu/accum.sh): which "step N" NVTX ranges
it holds, and for each the micro-batch ranges and optimizer steps inside it -> $OUT/accum.json."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

HOST = os.environ.get("NSYS_HOST", "/opt/nvidia/nsight-compute/2025.3.1/host")  # accum.sh's
NSYS = f"{HOST}/target-linux-x64/nsys"


def inside(rows: list[tuple[int, int, str]], start: int, end: int) -> dict[str, object]:
    """The micro-batch and optimizer-step ranges that lie within one step's range."""
    within = [text for a, b, text in rows if start <= a and b <= end]
    return {
        "micro_batches": sorted(t for t in within if t.startswith("micro ")),
        "optimizer_steps": within.count("optimizer step"),
        "ms": round((end - start) / 1e6, 3),
    }


def main() -> int:
    root, status = Path(sys.argv[1]), int(sys.argv[2])
    out = Path(os.environ.get("OUT", "/tmp/out"))
    reports = sorted((root / "nsight-reports").rglob("*.nsys-rep"))
    summary: dict[str, object] = {
        "nsys": subprocess.run([NSYS, "--version"], capture_output=True, text=True).stdout.strip(),
        "gpu": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip(),
        "job_exit": status,
        "reports": [r.name for r in reports],
        "patch_lines": [
            line
            for line in (root / "generated/accum/training-loop.patch").read_text().splitlines()
            if line.startswith("+") and "# nsysgen" in line
        ],
    }
    if reports:
        db = reports[0].with_suffix(".sqlite")
        subprocess.run(
            [NSYS, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(db),
             str(reports[0])],
            check=True, capture_output=True,
        )  # fmt: skip
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT e.start, e.end, COALESCE(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN "
                "StringIds s ON e.textId = s.id WHERE e.eventType IN (59, 60) ORDER BY e.start"
            ).fetchall()
            kernels = conn.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        steps = [(a, b, t) for a, b, t in rows if t.startswith("step ")]
        summary["steps"] = [t for _, _, t in steps]
        summary["kernels"] = kernels
        summary["per_step"] = {t: inside(rows, a, b) for a, b, t in steps}
        summary["outside_steps"] = sum(
            1 for a2, b2, x in rows if not x.startswith("step ")
            and not any(a <= a2 and b2 <= b for a, b, _ in steps)
        )  # fmt: skip
    text = json.dumps(summary, indent=2, sort_keys=True)
    (out / "accum.json").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
