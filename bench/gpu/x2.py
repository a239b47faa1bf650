"""Issue 17 on two GPUs with NCCL (bench/gpu/x2.sh): one generated job per straggler pattern.

tests/workloads/gpu_train.py --shape=launch --ddp --allreduce=explicit (one NCCL all-reduce of
the flattened gradients per step, one rank per H200), compiled by nsysgen (capture=steps
FIRST..LAST, ranks=all, the generated wrapper and training-loop patch) and run through the
stand-in srun (shim/srun), three jobs:

- clean: nothing injected;
- slow: rank 1 sleeps DELAY_MS at the start of every step;
- hiccup: rank 0 sleeps DELAY_MS at the start of steps HICCUP_STEPS.

Subcommands:
- `x2.py overrides JOB` (CPU machine, x2.sh prepare): the nsysgen overrides of one job, one a
  line; `x2.py jobs`: the job names.
- `x2.py run` (GPU machine, x2.sh run): the jobs (X2_PHASES=jobs), then (post) each report
  exported to SQLite, nsys stats CSVs (cuda_gpu_kern_sum, nvtx_gpu_proj_sum) from the full
  export, the export trimmed to the tables and columns `nsysgen analyze` reads (`trim`), nsys's
  recipes nccl_sum, cuda_gpu_kern_sum and nvtx_gpu_proj_sum over the slow job, packed into
  $OUT: x2-exports.tar.gz (trimmed exports), x2-stats.tar.gz (stats CSVs, recipe outputs),
  x2-reports.tar (the .nsys-rep files, when they fit), x2.json (what ran, what the reports hold,
  and, where the carried tree's nsysgen imports, the stragglers it finds).

The analysis proper runs on the CPU machine over the trimmed exports (bench/gpu/x2_collect.py).
X2_ROOT, NSYS_HOST (the bundle's host folder; both compiled into the jobs), X2_NSYS and
X2_PHASES=post let it be dry-run on a CPU machine with a stand-in nsys
(tests/bench/test_gpu_dry_runs_legacy.py).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import prove  # noqa: E402  (bench/gpu/prove.py, copied beside this file on the device)

ROOT = Path(os.environ.get("X2_ROOT", str(prove.ROOT)))
prove.ROOT = ROOT
NSYS = os.environ.get("X2_NSYS", prove.NSYS)
prove.NSYS = NSYS
OUT = Path(os.environ.get("OUT", "/tmp/out"))
START = time.monotonic()
DEADLINE = float(os.environ.get("X2_DEADLINE_S", "300"))
JOB_TIMEOUT = float(os.environ.get("X2_JOB_TIMEOUT_S", "120"))

STEPS, FIRST, LAST = 20, 8, 15
DELAY_MS = 40
HICCUP_STEPS = (11, 14)
PROGRAM = ["--shape=launch", f"--steps={STEPS}", "--ddp", "--allreduce=explicit"]
JOBS: dict[str, list[str]] = {
    "clean": [],
    "slow": [f"--delay-ms={DELAY_MS}", "--delay-rank=1", "--delay-steps=all"],
    "hiccup": [
        f"--delay-ms={DELAY_MS}",
        "--delay-rank=0",
        "--delay-steps=" + ",".join(map(str, HICCUP_STEPS)),
    ],
}
# What the straggler analysis must name (rank, kind, steps; None: every judged step).
EXPECTED: dict[str, list[tuple[int, str, list[int] | None]]] = {
    "clean": [],
    "slow": [(1, "slow rank", None)],
    "hiccup": [(0, "hiccup", list(HICCUP_STEPS))],
}
RECIPE_JOB = "slow"
RECIPES = ("nccl_sum", "cuda_gpu_kern_sum", "nvtx_gpu_proj_sum")
STATS = ("cuda_gpu_kern_sum", "nvtx_gpu_proj_sum")
# The tables and columns nsysgen's analysis reads (nsysgen/analyze/read/report.py), as
# kept in tests/data/gpu/steps17. None: every column.
KEEP: dict[str, list[str] | None] = {
    "StringIds": ["id", "value"],
    "NVTX_EVENTS": [
        "start", "end", "eventType", "text", "globalTid", "textId", "domainId", "binaryData",
    ],
    "NVTX_PAYLOAD_SCHEMA_ENTRIES": None,
    "CUPTI_ACTIVITY_KIND_KERNEL": [
        "start", "end", "deviceId", "streamId", "correlationId", "globalPid", "shortName",
    ],
    "CUPTI_ACTIVITY_KIND_MEMCPY": [
        "start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes",
    ],
    "CUPTI_ACTIVITY_KIND_MEMSET": [
        "start", "end", "deviceId", "streamId", "correlationId", "globalPid",
    ],
    # The stream waits and the event records they name (nsysgen/analyze/read/events.py).
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": [
        "start", "end", "streamId", "correlationId", "globalPid", "syncType", "eventId",
        "eventSyncId",
    ],
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT": [
        "streamId", "correlationId", "globalPid", "eventId", "eventSyncId",
    ],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "globalTid", "correlationId", "nameId"],
}  # fmt: skip
# The tables whose rows name a CUDA API call the trim keeps (the work it launched, a wait, a
# record).
GPU_WORK = tuple(t for t in KEEP if t.startswith("CUPTI_ACTIVITY_KIND_") and "RUNTIME" not in t)
SUMMARY: dict[str, Any] = {}


def log(*args: object) -> None:
    print(f"[x2 {time.monotonic() - START:6.1f}s]", *args, flush=True)


def left() -> float:
    return DEADLINE - (time.monotonic() - START)


def job_name(job: str) -> str:
    return f"x2-{job}"


def overrides(job: str) -> list[str]:
    """The nsysgen overrides of one job (x2.sh prepare adds output_dir)."""
    source = "tests/workloads/gpu_train.py"
    lines = (HERE.parents[1] / source).read_text().splitlines()
    loop_line = next(
        i for i, line in enumerate(lines, 1) if "for step in range(args.steps)" in line
    )
    timing = f"--timing-out={ROOT}/timing-${{job.name}}-{{rank}}.json"
    args = json.dumps([*PROGRAM, *JOBS[job], timing])
    return [
        "cluster=local",
        "cluster.nodes=1",
        "cluster.gpus_per_node=2",
        f"cluster.shared_fs={ROOT}",
        f"cluster.nsight_root={prove.HOST}",
        "nsight=2025.3.1",
        "workload=python",
        "workload.python.interpreter=python3",
        f"workload.python.script={ROOT}/work/{source}",
        f"workload.python.source={source}",
        f"workload.python.loop_line={loop_line}",
        f"workload.python.args={args}",
        "capture=steps",
        "capture.step_method=patch",  # the patch: ablate_launch.py runs the script outside the jobs
        f"capture.first_step={FIRST}",
        f"capture.last_step={LAST}",
        "capture.ranks=all",
        f"job.name={job_name(job)}",
    ]


def columns(db: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA {schema}.table_info({table})")]


def trim(full: Path, trimmed: Path) -> dict[str, int]:
    """A copy of an export with only what the analysis reads: KEEP's tables and columns, the
    CUDA API calls that launched GPU work, and the strings those rows name. Row counts back."""
    trimmed.unlink(missing_ok=True)
    db = sqlite3.connect(trimmed)
    db.execute("ATTACH DATABASE ? AS src", (str(full),))
    present = {r[0] for r in db.execute("SELECT name FROM src.sqlite_master WHERE type='table'")}
    work = [t for t in GPU_WORK if t in present]
    counts: dict[str, int] = {}
    for table, wanted in KEEP.items():
        if table in ("StringIds",) or table not in present:
            continue
        have = columns(db, "src", table)
        cols = have if wanted is None else [c for c in wanted if c in have]
        where = ""
        if table == "CUPTI_ACTIVITY_KIND_RUNTIME" and work:
            launched = " UNION ".join(
                f"SELECT correlationId, globalPid >> 24 FROM src.{t}" for t in work
            )
            where = f" WHERE (correlationId, globalTid >> 24) IN ({launched})"
        db.execute(f"CREATE TABLE {table} AS SELECT {', '.join(cols)} FROM src.{table}{where}")
    if "StringIds" in present:
        used = []
        for table, column in (
            ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"),
            ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"),
            ("NVTX_EVENTS", "textId"),
        ):
            if table in present and column in columns(db, "main", table):
                used.append(f"SELECT {column} FROM main.{table}")
        where = f" WHERE id IN ({' UNION '.join(used)})" if used else ""
        db.execute(f"CREATE TABLE StringIds AS SELECT id, value FROM src.StringIds{where}")
    db.commit()
    for (table,) in db.execute("SELECT name FROM main.sqlite_master WHERE type='table'"):
        counts[table] = db.execute(f"SELECT COUNT(*) FROM main.{table}").fetchone()[0]
    db.execute("DETACH DATABASE src")
    db.execute("VACUUM")
    db.close()
    return counts


def nsys(*args: str, timeout: float = 120) -> dict[str, Any]:
    began = time.monotonic()
    try:
        proc = subprocess.run([NSYS, *args], capture_output=True, text=True, timeout=timeout)
        code, tail = proc.returncode, proc.stdout[-800:] + proc.stderr[-1200:]
    except subprocess.TimeoutExpired:
        code, tail = 124, "timeout"
    return {"exit": code, "wall_s": round(time.monotonic() - began, 1), "tail": tail}


def timings(job: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for rank in (0, 1):
        path = ROOT / f"timing-{job_name(job)}-{rank}.json"
        if path.exists():
            data = json.loads(path.read_text())
            found[str(rank)] = {
                "backend": data.get("backend"),
                "step_ms": [round(t * 1000, 3) for t in data["step_seconds"]],
            }
    return found


def analysis() -> Any:
    """nsysgen's per-report reduction and straggler finder from the carried tree (standard
    library only), or None where it does not import."""
    sys.path.insert(0, os.environ.get("X2_REPO", str(Path.cwd())))
    try:
        from nsysgen.analyze.judge import late_ranks, stragglers
        from nsysgen.analyze.read import ranks, report

        return ranks, stragglers, report, late_ranks
    except ImportError as error:
        log("nsysgen does not import here, no straggler check on the device:", error)
        return None


def stragglers_of(trimmed: list[Path], modules: Any) -> dict[str, Any]:
    ranks, stragglers, report, late_ranks = modules
    tables = ranks.assign_ranks([report.read_export(p).tables for p in trimmed])
    lateness = stragglers.measure(tables)
    found = late_ranks.find(tables, lateness, stragglers.Thresholds())
    collectives: dict[str, dict[str, int]] = {}
    for t in tables:
        counts = collectives.setdefault(str(t.rank), {str(r.step): 0 for r in t.steps})
        for c in t.collectives:
            counts[str(c.step)] = counts.get(str(c.step), 0) + 1
    return {
        "stragglers": found,
        "collectives_per_step": collectives,
        "step_ms": {
            str(t.rank): {str(r.step): round(r.step_ms, 3) for r in t.steps} for t in tables
        },
        "wait_ms": {f"{r}/{s}": round(v, 3) for (r, s), v in sorted(lateness.wait_ms.items())},
    }


def judge(job: str, found: list[dict[str, Any]], judged: list[int]) -> list[str]:
    """Where the device's straggler list differs from the planted one."""
    want = [
        (rank, kind, steps if steps is not None else judged) for rank, kind, steps in EXPECTED[job]
    ]
    got = [(s["rank"], s["kind"], s["steps"]) for s in found]
    return [] if got == want else [f"{job}: stragglers {got}, planted {want}"]


def same_reduction(full: Path, trimmed: Path, modules: Any) -> bool:
    """The trimmed export reduces to exactly what the full one does."""
    report = modules[2]
    a = [dataclasses.asdict(t) for t in report.read_export(full, "r").tables]
    b = [dataclasses.asdict(t) for t in report.read_export(trimmed, "r").tables]
    return a == b


def export(report: Path) -> Path | None:
    """The report's full SQLite export (beside it), or None where nsys failed."""
    db = report.with_suffix(".sqlite")
    if db.exists() and db.stat().st_mtime >= report.stat().st_mtime:
        return db
    try:
        return prove.export(report)
    except subprocess.CalledProcessError as error:
        log("export failed:", report.name, (error.stderr or b"")[-500:])
        return None


def stats(db: Path, folder: Path) -> dict[str, Any]:
    """nsys stats CSVs of one full export: FOLDER/<report>_<stat>.csv."""
    report = ",".join(STATS)
    output = str(folder / db.stem)
    flags = ["--format", "csv", "--force-overwrite", "true", "--output", output]
    return nsys("stats", "--report", report, *flags, str(db))


def reduce_job(job: str, found: dict[Path, Path | None], exports: Path, modules: Any) -> None:
    """Per report: trim, what it holds, whether the trim changes the reduction; per job: the
    stragglers the carried nsysgen finds and whether they are the planted ones."""
    entry: dict[str, Any] = SUMMARY["jobs"][job]
    entry["timing"] = timings(job)
    entry["reports"] = []
    trimmed = []
    for report, db in found.items():
        item: dict[str, Any] = {"report": report.name, "bytes": report.stat().st_size}
        entry["reports"].append(item)
        if db is None:
            continue
        small = exports / f"{report.stem}.sqlite"
        item["rows"] = trim(db, small)
        item["export_bytes"], item["trimmed_bytes"] = db.stat().st_size, small.stat().st_size
        item["steps_per_pid"] = prove.nvtx_steps(db)
        item["kernels"] = prove.kernels(db)
        if modules is not None:
            item["trim_exact"] = same_reduction(db, small, modules)
        trimmed.append(small)
    if modules is None or len(trimmed) != 2:
        return
    try:
        analysed = stragglers_of(trimmed, modules)
    except Exception as error:  # noqa: BLE001 - a finding, not a reason to stop
        analysed = {"error": repr(error)}
    entry["device_analysis"] = analysed
    # Neither edge of the window is judged (nsysgen/analyze/judge/stragglers.py: the pauses as the
    # capture opens and closes).
    problems = judge(job, analysed.get("stragglers", []), list(range(FIRST + 1, LAST)))
    entry["device_check"] = problems or "planted stragglers named, nothing else"
    log(job, "stragglers:", json.dumps(analysed.get("stragglers"))[:600])
    log(job, "check:", entry["device_check"])


def recipes(stage: Path) -> None:
    """nsys's recipes over the RECIPE_JOB's reports, in parallel, within the deadline."""
    budget = max(0.0, left() - 20)
    found = prove.reports(job_name(RECIPE_JOB))
    if budget < 30 or not found:
        SUMMARY["recipes"] = {"skipped": f"{budget:.0f} s left, {len(found)} reports"}
        return
    folder = found[0].parent  # the run's own folder, nsight-reports/x2-slow/job<ID>/
    out = stage / "recipes"
    out.mkdir(parents=True, exist_ok=True)

    def recipe(name: str) -> dict[str, Any]:
        args = ["--input", str(folder), "--output", str(out / name), "--csv", "--force-overwrite"]
        result = nsys("recipe", name, *args, timeout=budget)
        made = out / name
        files = made.rglob("*") if made.exists() else iter(())
        result["files"] = sorted(str(p.relative_to(made)) for p in files if p.is_file())
        log("recipe", name, "exit", result["exit"], "in", result["wall_s"], "s")
        return result

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(RECIPES)) as pool:
        SUMMARY["recipes"] = {"job": RECIPE_JOB} | dict(
            zip(RECIPES, pool.map(recipe, RECIPES), strict=True)
        )


def post() -> None:
    stage = ROOT / "x2-out"
    shutil.rmtree(stage, ignore_errors=True)
    exports, stats_dir = stage / "exports", stage / "nsys-stats"
    exports.mkdir(parents=True)
    stats_dir.mkdir()
    reports = {job: prove.reports(job_name(job)) for job in JOBS}
    everything = [r for found in reports.values() for r in found]
    log("reports:", [r.name for r in everything])
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        full = dict(zip(everything, pool.map(export, everything), strict=True))
        made = [db for db in full.values() if db is not None]
        stat_runs = [pool.submit(stats, db, stats_dir) for db in made]
        modules = analysis()
        for job, found in reports.items():
            reduce_job(job, {r: full[r] for r in found}, exports, modules)
        SUMMARY["nsys_stats"] = {db.stem: f.result() for db, f in zip(made, stat_runs, strict=True)}
    for name, run_ in SUMMARY["nsys_stats"].items():
        if run_["exit"] != 0:
            log("nsys stats failed:", name, run_["tail"][-400:])
    pack(stage)
    recipes(stage)  # last: checks on the side, which the deadline may cut
    pack(stage)


def pack(stage: Path) -> None:
    """$OUT: at most 8 files come back, 16 MiB each."""
    with tarfile.open(OUT / "x2-exports.tar.gz", "w:gz") as tar:
        tar.add(stage / "exports", arcname="exports")
    with tarfile.open(OUT / "x2-stats.tar.gz", "w:gz") as tar:
        for folder in ("nsys-stats", "recipes"):
            for path in sorted((stage / folder).rglob("*")):
                if path.is_file() and path.stat().st_size < 4 << 20:
                    tar.add(path, arcname=str(path.relative_to(stage)))
    reports = [r for job in JOBS for r in prove.reports(job_name(job))]
    if sum(r.stat().st_size for r in reports) > 15 << 20:
        reports = prove.reports(job_name(RECIPE_JOB))
    with tarfile.open(OUT / "x2-reports.tar", "w") as tar:
        for report in reports:
            tar.add(report, arcname=report.name)
    save()


def save() -> None:
    SUMMARY["elapsed_s"] = round(time.monotonic() - START, 1)
    (OUT / "x2.json").write_text(json.dumps(SUMMARY, indent=1, sort_keys=True))


def run() -> int:
    phases = os.environ.get("X2_PHASES", "jobs,post").split(",")
    smi = subprocess.run(
        [shutil.which("nvidia-smi") or "true", "-L"], capture_output=True, text=True, check=False
    )
    SUMMARY.update(
        {
            "nsys": nsys("--version")["tail"].strip(),
            "gpus": smi.stdout.strip().splitlines(),
            "window": {"steps": STEPS, "first": FIRST, "last": LAST},
            "program": PROGRAM,
            "jobs": {job: {"args": args} for job, args in JOBS.items()},
            "delay_ms": DELAY_MS,
            "hiccup_steps": list(HICCUP_STEPS),
        }
    )
    if "jobs" in phases:
        for job in JOBS:
            shutil.rmtree(ROOT / "nsight-reports" / job_name(job), ignore_errors=True)
            SUMMARY["jobs"][job]["run"] = prove.run_job(job_name(job), timeout=JOB_TIMEOUT)
            log(job, "exit", SUMMARY["jobs"][job]["run"]["exit"])
            save()
    if "post" in phases:
        post()
    save()
    failed = [job for job in JOBS if SUMMARY["jobs"][job].get("run", {}).get("exit", 0) != 0]
    log("jobs failed:", failed or "none")
    log("device checks:", [SUMMARY["jobs"][job].get("device_check") for job in JOBS])
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["jobs"]:
        print("\n".join(JOBS))
        return 0
    if argv[:1] == ["overrides"] and len(argv) == 2:
        print("\n".join(overrides(argv[1])))
        return 0
    if argv[:1] == ["run"]:
        return run()
    print("usage: x2.py jobs | overrides JOB | run", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
