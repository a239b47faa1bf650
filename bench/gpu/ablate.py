"""Second GPU run: where the cost of a step window comes from, and what cudaProfilerStart from
one worker does to the other workers of the same nsys session (issue 9's question).

Runs on the GPU machine after device.sh's set-up (bench/gpu/device.sh ablate). SHAPE (compute)
and ROUNDS (2) shrink it for the CPU dry run (tests/bench/test_gpu_dry_runs_legacy.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prove import NSYS, OUT, ROOT, export, query, reports, run_job  # noqa: E402

SCRIPT = ROOT / "work/tests/workloads/gpu_train.py"
WINDOW = {
    "NSYSGEN_PROFILE_FIRST_STEP": "40",
    "NSYSGEN_PROFILE_LAST_STEP": "44",
    "NSYSGEN_PROFILE_RANKS": "0",
}
BASE = ["--sample=none", "--cpuctxsw=none", "--force-overwrite=true"]
RANGE = ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]
VARIANTS = {
    "no nsys": None,
    "nsysgen flags (cuda,nvtx + range + --cuda-event-trace=false)": [
        "--trace=cuda,nvtx",
        *RANGE,
        "--cuda-event-trace=false",
    ],
    "without --cuda-event-trace=false": ["--trace=cuda,nvtx", *RANGE],
    "--trace=cuda only": ["--trace=cuda", *RANGE, "--cuda-event-trace=false"],
    "nsysgen flags, window never opens": ["--trace=cuda,nvtx", *RANGE, "--cuda-event-trace=false"],
    "--trace=nvtx, no range (nothing CUDA traced)": ["--trace=nvtx"],
}


def median_outside(path: Path) -> float:
    times = json.loads(path.read_text())["step_seconds"]
    outside = [t for i, t in enumerate(times) if i >= 5 and not 40 <= i <= 44]
    return round(statistics.median(outside) * 1000, 2)


def overhead() -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    for round_ in range(int(os.environ.get("ROUNDS", "2"))):
        for index, (name, flags) in enumerate(VARIANTS.items()):
            timing = ROOT / f"ablate-{index}-{round_}.json"
            program = [
                sys.executable,
                str(SCRIPT),
                f"--shape={os.environ.get('SHAPE', 'compute')}",
                "--steps=60",
                f"--timing-out={timing}",
            ]
            env = {**os.environ, **({} if "never" in name else WINDOW)}
            command = (
                program
                if flags is None
                else [NSYS, "profile", *BASE, *flags, f"--output=/tmp/ablate-{index}", *program]
            )
            subprocess.run(command, env=env, check=True, capture_output=True)
            results.setdefault(name, []).append(median_outside(timing))
    return results


def windows(db: Path) -> dict[str, Any]:
    """Per process: first and last kernel start, and the span of its 'step N' ranges (ns)."""
    kernels = query(
        db,
        "SELECT globalPid >> 24 & 16777215, MIN(start), MAX(end), COUNT(*) "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1",
    )
    steps = query(
        db,
        "SELECT e.globalTid >> 24 & 16777215, MIN(e.start), MAX(e.end) FROM "
        "NVTX_EVENTS e LEFT JOIN StringIds s ON e.textId = s.id WHERE "
        "COALESCE(e.text, s.value) LIKE 'step %' GROUP BY 1",
    )
    # A failed job leaves a report without these tables: query() answers [("error", why)],
    # which the results keep instead of the run stopping on it.
    for rows in (kernels, steps):
        if rows and rows[0][0] == "error":
            return {"error": rows[0][1]}
    out: dict[str, Any] = {}
    for pid, first, last, count in kernels:
        out[str(pid)] = {"kernels": count, "first_kernel": first, "last_kernel": last}
    for pid, start, end in steps:
        out.setdefault(str(pid), {}).update({"steps_start": start, "steps_end": end})
    return out


def session_scope() -> dict[str, object]:
    found: dict[str, object] = {}
    for name, ranks in (("fsdp-node-all-nogm", "all"), ("fsdp-node-all-nogm", "0")):
        sbatch = ROOT / "generated" / name / "job.sbatch"
        text = re.sub(
            r"NSYSGEN_PROFILE_RANKS=\S+", f"NSYSGEN_PROFILE_RANKS={ranks}", sbatch.read_text()
        )
        sbatch.write_text(text)
        shutil.rmtree(ROOT / "nsight-reports" / name, ignore_errors=True)
        result = run_job(name)
        db = export(reports(name)[0])
        found[f"ranks={ranks}"] = {"run": result["exit"], "per_process": windows(db)}
    return found


def main() -> int:
    shape = os.environ.get("SHAPE", "compute")
    summary = {f"overhead_median_step_ms_{shape}": overhead(), "session_scope": session_scope()}
    (OUT / "ablation.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
