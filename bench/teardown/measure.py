"""What nsys 2023.4.4 leaves behind when a job ends early on a real (local) Slurm cluster.

Cases: cancelled during the capture, cancelled after it, killed at the time limit; each with the
setup of nsysgen before issue 16 ("without guards") and with its teardown guards (early
--signal, nsys's temp dir in the report folder), and with a report that converts at once or one
whose import takes SLOW_IMPORT seconds, longer than the cluster's KillWait (5 s): a stand-in for
a large report, made with slow-importer.sh in place of QdstrmImporter.

Usage (a running tests/infra/slurm.sh cluster, SLURM_CONF exported, nsys 2023.4.4 installed
under SHARED by a generated install-nsight.sh, nvtx<=0.2.11 in this Python):
    python bench/teardown/measure.py SHARED OLD_SRC OUT.json
OLD_SRC holds nsysgen, conf and schemas from before the guards (git archive 0888319 ...).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SLOW = 12  # seconds; KillWait on the test cluster is 5
CASES = {
    # name: (capture overrides, time limit min, cancel after s or None, scancel extra args)
    "cancel-during": (["capture.delay=0", "capture.duration=0"], 10, 10.0, []),
    "cancel-after": (["capture.delay=0", "capture.duration=3"], 10, 12.0, []),
    "time-limit": (["capture.delay=0", "capture.duration=0"], 2, None, []),  # program: 300 s
    "cancel-term": (["capture.delay=0", "capture.duration=0"], 10, 10.0, ["--signal=TERM"]),
}


def compile_job(shared: Path, src: Path | None, name: str, case: str) -> Path:
    overrides, limit, _, _ = CASES[case]
    script = shared / "sleepy_steps.py"
    shutil.copy(HERE / "sleepy_steps.py", script)
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    args = [
        sys.executable,
        "-m",
        "nsysgen",
        "cluster=local",
        f"cluster.shared_fs={shared}",
        "cluster.gpus_per_node=1",
        "nsight=2023.4.4",
        "workload=python",
        f"workload.python.interpreter={sys.executable}",
        f"workload.python.script={script}",
        f"workload.python.args=['{3000 if case == 'time-limit' else 600}','0.1']",
        "capture=window",
        "capture.trace=[nvtx,osrt]",
        "capture.ranks=all",
        "target.exclusive=false",
        *overrides,
        f"job.name={name}",
        f"job.time_limit_min={limit}",
        f"output_dir={shared / 'measure'}",
    ]
    subprocess.run(args, env=env, check=True, capture_output=True, cwd=src or REPO)
    return shared / "measure" / name


def reverify(jobs: list[dict[str, Any]]) -> None:
    """What is left of each job, and what nsysgen verify says about it."""
    for job in jobs:
        folder = Path(str(job["folder"]))
        report_dir = folder.parent.parent / "nsight-reports" / folder.name
        files = sorted(report_dir.rglob("*.nsys-rep")) + sorted(report_dir.rglob("*.qdstrm"))
        job["left"] = [f"{p.relative_to(report_dir)} ({p.stat().st_size} B)" for p in files]
        expect = folder / "nsysgen-expect.json"
        twin = Path(str(folder).replace("-before-", "-guards-"))
        if twin != folder:  # before the guards: the same names, from the guarded compile
            text = (twin / "nsysgen-expect.json").read_text()
            for a, b in ((twin.name, folder.name), (re.escape(twin.name), re.escape(folder.name))):
                text = text.replace(json.dumps(a)[1:-1], json.dumps(b)[1:-1])
            expect.write_text(text)
        verify = subprocess.run(
            [
                sys.executable,
                "-m",
                "nsysgen",
                "verify",
                str(folder),
                "--job-id",
                str(job["job_id"]),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        job["verify_exit"] = verify.returncode
        job["verify"] = verify.stdout + verify.stderr


def wait_and_cancel(jobs: list[dict[str, Any]]) -> None:
    """Polls the jobs; cancels each at its case's time; returns when all have ended."""
    pending = list(jobs)
    while pending:
        time.sleep(1)
        for job in list(pending):
            _, _, cancel_at, extra = CASES[job["case"]]
            state = subprocess.run(
                ["scontrol", "show", "job", job["job_id"]], capture_output=True, text=True
            ).stdout
            job_state = state.split("JobState=")[1].split()[0] if "JobState=" in state else "?"
            if job_state == "RUNNING" and "started" not in job:
                job["started"] = time.time()
            if (
                cancel_at is not None
                and "started" in job
                and "cancelled" not in job
                and time.time() - job["started"] >= cancel_at
            ):
                subprocess.run(["scancel", *extra, job["job_id"]], check=True)
                job["cancelled"] = round(time.time() - job["started"], 1)
            if job_state not in ("PENDING", "RUNNING", "COMPLETING", "?"):
                job["state"] = job_state
                job["ended_after_s"] = round(time.time() - job.get("started", time.time()), 1)
                pending.remove(job)
        if time.time() - jobs[0]["submitted"] > 900:
            return


def main() -> int:
    shared, old_src, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    only = sys.argv[4:]  # case names to run (default: all); the results of others are kept
    if only == ["reverify"]:
        jobs = json.loads(out.read_text())
        reverify(jobs)
        out.write_text(json.dumps(jobs, indent=1) + "\n")
        return 0
    host = shared / "nsight-systems/2023.4.4/usr/lib/nsight-systems/host-linux-x64"
    real = host / "QdstrmImporter.real"
    if not real.exists():
        (host / "QdstrmImporter").rename(real)
    shutil.copy(HERE / "slow-importer.sh", host / "QdstrmImporter")
    jobs = []
    try:
        for case in [c for c in CASES if not only or c in only]:
            for guards in (False, True):
                if case == "cancel-term" and not guards:
                    continue
                for slow in (0, SLOW):
                    name = f"td-{case}-{'guards' if guards else 'before'}-import{slow}"
                    folder = compile_job(shared, None if guards else old_src, name, case)
                    env = {**os.environ, "SLOW_IMPORT": str(slow)}
                    sub = subprocess.run(
                        ["sbatch", "--parsable", "job.sbatch"],
                        cwd=folder,
                        env=env,
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                    job_id = sub.stdout.strip().split(";")[0]
                    jobs.append(
                        {
                            "name": name,
                            "case": case,
                            "guards": guards,
                            "slow_import_s": slow,
                            "job_id": job_id,
                            "folder": str(folder),
                            "submitted": time.time(),
                        }
                    )
        wait_and_cancel(jobs)
        time.sleep(3)
        reverify(jobs)
    finally:
        real.rename(host / "QdstrmImporter")
    if only and out.exists():
        jobs = [j for j in json.loads(out.read_text()) if j["case"] not in only] + jobs
    out.write_text(json.dumps(jobs, indent=1) + "\n")
    for job in jobs:
        print(
            job["name"],
            job.get("state"),
            job.get("ended_after_s"),
            job["left"],
            "verify",
            job["verify_exit"],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
