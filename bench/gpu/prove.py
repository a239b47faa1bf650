"""Runs on the GPU machine (bench/gpu/device.sh): the generated job.sbatch files, unmodified,
with real nsys 2025.3.1, then reads the reports and writes summary.json.

Proves: the step window of nsysgen's training-loop patch is exact (issue 6); the cost of a step
window against an unprofiled run and against a whole-run capture (issue 6); NCCL all-reduce
reports (issue 8); FSDP on two GPUs in both launch shapes (issue 9).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The device's "shared filesystem" and nsys, as prepare.sh compiled them (the CPU dry run's,
# tests/bench/test_gpu_dry_runs_legacy.py, through device.sh).
ROOT = Path(os.environ.get("GPU_ROOT", "/tmp/nsysgen-gpu"))
HERE = Path(__file__).resolve().parent  # device/ in the carried tree
HOST = os.environ.get("NSYS_HOST", "/opt/nvidia/nsight-compute/2025.3.1/host")
NSYS = f"{HOST}/target-linux-x64/nsys"
OUT = Path(os.environ.get("OUT", "/tmp/out"))
JOB_ID = 100


def log(*args: object) -> None:
    print(*args, flush=True)


def run_job(
    name: str, env_extra: dict[str, str] | None = None, timeout: float | None = None
) -> dict[str, object]:
    """Run generated/<name>/job.sbatch through bash, as sbatch would, on this one node.

    After `timeout` seconds the job's whole process group (srun's tasks, nsys, the program)
    is killed and the exit is 124, as with timeout(1)."""
    global JOB_ID
    JOB_ID += 1
    folder = ROOT / "generated" / name
    sbatch = (folder / "job.sbatch").read_text()
    per_node = re.search(r"^#SBATCH --ntasks-per-node=(\d+)$", sbatch, re.M)
    logs = ROOT / "logs" / name
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{HERE / 'shim'}:{os.environ['PATH']}",
        "NSYSGEN_DIR": str(folder),
        "NSYSGEN_LOG_DIR": str(logs),
        "SLURM_JOB_ID": str(JOB_ID),
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_JOB_NODELIST": "gpunode1",
        "SLURM_NTASKS_PER_NODE": per_node.group(1) if per_node else "1",
        **(env_extra or {}),
    }
    start = time.perf_counter()
    job = subprocess.Popen(
        ["bash", str(folder / "job.sbatch")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,  # its own group, killed whole on timeout; same session
    )
    try:
        stdout, stderr = job.communicate(timeout=timeout)
        code = job.returncode
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        stdout, stderr = job.communicate()
        code = 124
    proc = subprocess.CompletedProcess(job.args, code, stdout, stderr)
    wall = time.perf_counter() - start
    tails = {p.name: p.read_text()[-1500:] for p in sorted(logs.glob("*.log"))}
    ok = proc.returncode == 0
    log(f"{name}: exit {proc.returncode} in {wall:.1f} s")
    if not ok:
        log(proc.stdout[-2000:], proc.stderr[-2000:], json.dumps(tails)[-4000:])
    return {
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "job_id": JOB_ID,
        "task_logs_tail": tails if not ok else {},
    }


def export(report: Path) -> Path:
    sqlite_path = report.with_suffix(".sqlite")
    subprocess.run(
        [
            NSYS,
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "--output",
            str(sqlite_path),
            str(report),
        ],
        check=True,
        capture_output=True,
    )
    return sqlite_path


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError as error:
            return [("error", str(error))]


def nvtx_steps(db: Path) -> dict[int, list[int]]:
    rows = query(
        db,
        "SELECT e.globalTid, COALESCE(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN "
        "StringIds s ON e.textId = s.id WHERE e.eventType IN (59, 60)",
    )
    steps: dict[int, list[int]] = {}
    for tid, text in rows:
        if isinstance(text, str) and text.startswith("step "):
            pid = (tid >> 24) & 0xFFFFFF
            steps.setdefault(pid, []).append(int(text.split()[1]))
    return {pid: sorted(values) for pid, values in steps.items()}


def kernels(db: Path) -> dict[str, object]:
    rows = query(
        db,
        "SELECT k.globalPid, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
        "ON k.shortName = s.id",
    )
    if rows and rows[0][0] == "error":
        return {"count": 0, "nccl": 0, "pids": 0}
    pids = {(pid >> 24) & 0xFFFFFF for pid, _ in rows}
    return {
        "count": len(rows),
        "nccl": sum(1 for _, n in rows if "nccl" in n.lower()),
        "pids": len(pids),
    }


def has_gpu_metrics(db: Path) -> bool:
    tables = {r[0] for r in query(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    return "GPU_METRICS" in tables and query(db, "SELECT COUNT(*) FROM GPU_METRICS")[0][0] > 0


def reports(name: str) -> list[Path]:
    """The setup's reports: each run's in its own folder, nsight-reports/NAME/job<ID>/."""
    return sorted((ROOT / "nsight-reports" / name).glob("**/*.nsys-rep"))


def step_times(path: Path, window: tuple[int, int]) -> dict[str, float]:
    data = json.loads(path.read_text())
    times = data["step_seconds"]
    outside = [t for i, t in enumerate(times) if i >= 5 and not window[0] <= i <= window[1]]
    return {
        "median_ms": round(statistics.median(outside) * 1000, 3),
        "mean_ms": round(statistics.mean(outside) * 1000, 3),
        "steps": len(outside),
    }


def main() -> int:
    summary: dict[str, object] = {
        "nsys": subprocess.run([NSYS, "--version"], capture_output=True, text=True).stdout.strip()
    }
    summary["gpus"] = (
        subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        .stdout.strip()
        .splitlines()
    )
    # Issue 6: exact step window, cost and sizes; unprofiled runs use the patched script without
    # the window variables (the patch does nothing then).
    rounds = int(os.environ.get("ROUNDS", "2"))
    parts = os.environ.get("PARTS", "6,8,9").split(",")
    shapes = os.environ.get("SHAPES", "compute,launch").split(",")  # the CPU dry run: launch
    for shape in shapes if "6" in parts else ():
        runs: dict[str, list[float]] = {"unprofiled": [], "window": [], "whole": []}
        for attempt in range(rounds):
            script = ROOT / "work/tests/workloads/gpu_train.py"
            timing = ROOT / f"timing-{shape}-plain{attempt}.json"
            subprocess.run(
                [
                    sys.executable,
                    str(script),
                    f"--shape={shape}",
                    "--steps=80",
                    f"--timing-out={timing}",
                ],
                check=True,
            )
            runs["unprofiled"].append(step_times(timing, (40, 44))["median_ms"])
            for kind in ("steps", "whole"):
                name = f"{kind}-{shape}"
                shutil.rmtree(ROOT / "nsight-reports" / name, ignore_errors=True)
                result = run_job(name)
                assert result["exit"] == 0, result
                runs["window" if kind == "steps" else "whole"].append(
                    step_times(ROOT / f"timing-{shape}-{name}.json", (40, 44))["median_ms"]
                )
        window_reports, whole_reports = reports(f"steps-{shape}"), reports(f"whole-{shape}")
        db = export(window_reports[0])
        summary[f"issue6_{shape}"] = {
            "window_report": window_reports[0].name,
            "steps_in_window_report": nvtx_steps(db),
            "kernels_in_window_report": kernels(db),
            "report_bytes": {
                "window_40_44": window_reports[0].stat().st_size,
                "whole_run": whole_reports[0].stat().st_size,
            },
            "median_step_ms_outside_window": runs,
        }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    if "8" not in parts:
        return 0
    # Issue 8: NCCL all-reduce report.
    result = run_job("nccl-allreduce")
    rep = reports("nccl-allreduce")
    summary["issue8_nccl"] = {
        "run": result,
        "reports": [r.name for r in rep],
        "sizes": json.loads((ROOT / "nccl-summary.json").read_text()),
    }
    if rep:
        db = export(rep[0])
        shutil.copy(db, OUT / "nccl-allreduce.sqlite")
        summary["issue8_nccl"]["kernels"] = kernels(db)
    # Issue 9: FSDP on two GPUs. GPU metrics need counter access, which a VM may not grant:
    # probe first and fall back to the setups compiled without them.
    probe = subprocess.run(
        [
            NSYS,
            "profile",
            "--gpu-metrics-devices=all",
            "--force-overwrite=true",
            "--output=/tmp/gm-probe",
            "true",
        ],
        capture_output=True,
        text=True,
    )
    gpu_metrics = probe.returncode == 0 and "ERR_NVGPUCTRPERM" not in probe.stdout + probe.stderr
    summary["gpu_metrics_probe"] = {
        "ok": gpu_metrics,
        "output": (probe.stdout + probe.stderr)[-800:],
    }
    suffix = "" if gpu_metrics else "-nogm"
    for base in ("fsdp-node-all", "fsdp-node-rank0", "fsdp-gpu-all"):
        name = base + suffix
        result = run_job(name)
        found = []
        for report in reports(name):
            db = export(report)
            found.append(
                {
                    "report": report.name,
                    "steps_per_pid": nvtx_steps(db),
                    "kernels": kernels(db),
                    "gpu_metrics": has_gpu_metrics(db),
                    "bytes": report.stat().st_size,
                }
            )
        summary[f"issue9_{base}"] = {"setup": name, "run": result, "reports": found}
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    for name in ("steps-launch", "whole-launch"):
        for report in reports(name)[:1]:
            shutil.copy(report, OUT / f"{name}.nsys-rep")
    log(json.dumps(summary, indent=1)[:6000])
    from check_results import check

    problems = check(json.loads((OUT / "summary.json").read_text()))
    log("\n".join(problems) or "all GPU claims hold")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
