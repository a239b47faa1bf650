"""Issue 20: what nsys costs outside a step window on a launch-bound loop, knob by knob.

Runs on the GPU machine after device.sh's set-up (`bash bench/gpu/device.sh ablate-launch`).
Every configuration runs the nsysgen-patched tests/workloads/gpu_train.py (--shape=launch: 48 x
[Linear(256), GELU, LayerNorm], about 2,000 kernels a step) with the window STEPS 30..34 and
reports the median step time of the steps outside it. "current" is the flag set parsed from the
nsys-exec that nsysgen generated (device/generated/steps-launch), so the baseline is what users
get, not a copy of it.

Rounds are interleaved (every configuration once per round) because the unprofiled median
itself drifted by 10 % between runs in the first measurement (RESULTS.md, issue 6); the
overhead is given both against the median of all unprofiled runs and as the median of the
per-round ratios. The first round's report of each configuration is then exported to check
that the window stayed exact (steps 30..34, the same kernel count as "current").

Phases (PHASES, comma list): matrix, check, recheck, ddp, extra (more rounds until the
deadline). ONLY (comma list) picks configurations and, with ROTATE=0, fixes their order in
every round (the first ones are the last to be cut by the deadline); RECHECK (comma list,
default g-node) names the configurations whose window is checked again in every later round.
DEADLINE_S bounds the whole run; results are rewritten after every run, so a run cut short
still brings back what it measured.

--nccl (issue 20 on a 2-GPU machine, bench/gpu/x2.sh): only the DDP phase, one rank per GPU so
that the ranks talk through NCCL, DDP_ROUNDS (default 4) rounds of neither / rank 0 / both ranks
under nsys, rotated by the round; -> ablation-launch-nccl.json. It refuses to run on fewer than
2 GPUs and flags every run whose backend was not NCCL. ABLATE_WRAPPER names the generated
nsys-exec whose flags are "current" (default generated/steps-launch/nsys-exec, beside this
file); WARMUP=0 skips the one-process warm-up (x2.sh has warmed both GPUs already).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Overridable so that the orchestration can be dry-run on a CPU machine with a stand-in nsys.
ROOT = Path(os.environ.get("ABLATE_ROOT", "/tmp/nsysgen-gpu"))
NSYS = os.environ.get(
    "ABLATE_NSYS", "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"
)
OUT = Path(os.environ.get("OUT", "/tmp/out"))
SCRIPT = ROOT / "work/tests/workloads/gpu_train.py"
STEPS, FIRST, LAST, WARMUP = 50, 30, 34, 5
# Rounds of a later call are numbered on from this one, so that calls can be pooled.
ROUND_OFFSET = int(os.environ.get("ROUND_OFFSET", "0"))
START = time.monotonic()
DEADLINE = float(os.environ.get("DEADLINE_S", "560"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
ROTATE = os.environ.get("ROTATE", "1") != "0"
NCCL = "--nccl" in sys.argv[1:]
RESULT = OUT / ("ablation-launch-nccl.json" if NCCL else "ablation-launch.json")
DDP_SHAPES: list[tuple[str, tuple[int, ...]]] = [("neither", ()), ("rank0", (0,)), ("both", (0, 1))]


def log(*args: object) -> None:
    print(f"[{time.monotonic() - START:6.1f}s]", *args, flush=True)


def left() -> float:
    return DEADLINE - (time.monotonic() - START)


def current_flags() -> list[str]:
    """The switches of the generated wrapper's `nsys profile` line, minus output naming."""
    wrapper = HERE / os.environ.get("ABLATE_WRAPPER", "generated/steps-launch/nsys-exec")
    text = wrapper.read_text()
    body = text.split('exec "$nsys" profile \\', 1)[1].split('"$@"', 1)[0]
    flags = [w for w in shlex.split(body.replace("\\\n", " ")) if w.startswith("--")]
    return [f for f in flags if not f.startswith(("--output=", "--force-overwrite"))]


CURRENT = current_flags()


def without(flags: list[str], *prefixes: str) -> list[str]:
    return [f for f in flags if not f.startswith(prefixes)]


def replace(flags: list[str], flag: str) -> list[str]:
    return [*without(flags, flag.split("=")[0] + "="), flag]


@dataclass
class Config:
    key: str
    label: str
    mode: str = "profile"  # none | profile | launch-start | launch-only
    flags: list[str] = field(default_factory=list)
    program: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    opens: bool = True  # False: the rank is not in NSYSGEN_PROFILE_RANKS, the window never opens


SAMPLING = ["--sample=process-tree", "--cpuctxsw=process-tree"]
GRAPH = ["--graph"]
MATRIX = [
    Config("none", "no nsys", "none"),
    Config("current", "current generated flags", flags=CURRENT),
    Config("cuda", "--trace=cuda (no nvtx)", flags=replace(CURRENT, "--trace=cuda")),
    Config("nvtx", "--trace=nvtx + cudaProfilerApi range", flags=replace(CURRENT, "--trace=nvtx")),
    Config("never", "current flags, window never opens", flags=CURRENT, opens=False),
    Config("cet", "--cuda-event-trace=true", flags=replace(CURRENT, "--cuda-event-trace=true")),
    Config("mem", "--cuda-memory-usage=true", flags=[*CURRENT, "--cuda-memory-usage=true"]),
    Config(
        "sampling",
        "--sample/--cpuctxsw=process-tree",
        flags=[*without(CURRENT, "--sample=", "--cpuctxsw="), *SAMPLING],
    ),
    Config(
        "backtrace",
        "sampling + --cudabacktrace=all --python-backtrace=cuda --python-sampling=true",
        flags=[
            *without(CURRENT, "--sample=", "--cpuctxsw="),
            *SAMPLING,
            "--cudabacktrace=all",
            "--python-backtrace=cuda",
            "--python-sampling=true",
        ],
    ),
    Config("osrt", "--trace=cuda,nvtx,osrt", flags=replace(CURRENT, "--trace=cuda,nvtx,osrt")),
    Config(
        "osrt-thr",
        "--trace=cuda,nvtx,osrt --osrt-threshold=1000000",
        flags=[*replace(CURRENT, "--trace=cuda,nvtx,osrt"), "--osrt-threshold=1000000"],
    ),
    Config(
        "repeat", "--capture-range-end=repeat", flags=replace(CURRENT, "--capture-range-end=repeat")
    ),
    Config(
        "stop-shutdown",
        "--capture-range-end=stop-shutdown --kill=none",
        flags=[*replace(CURRENT, "--capture-range-end=stop-shutdown"), "--kill=none"],
    ),
    Config("cuda-hw", "--trace=cuda-hw,nvtx", flags=replace(CURRENT, "--trace=cuda-hw,nvtx")),
    Config(
        "minimal",
        "--trace=cuda --cuda-graph-trace=graph:host-only "
        "--cuda-flush-interval=0 (everything optional off)",
        flags=[
            *replace(CURRENT, "--trace=cuda"),
            "--cuda-graph-trace=graph:host-only",
            "--cuda-flush-interval=0",
        ],
    ),
    Config(
        "launch-start", "nsys launch + nsys start -c cudaProfilerApi", "launch-start", flags=CURRENT
    ),
    Config("launch-only", "nsys launch, collection never started", "launch-only", flags=CURRENT),
    Config("g-none", "CUDA graph step: no nsys", "none", program=GRAPH),
    Config(
        "g-current",
        "CUDA graph step: current flags (graph trace default)",
        flags=CURRENT,
        program=GRAPH,
    ),
    Config(
        "g-host",
        "CUDA graph step: --cuda-graph-trace=graph:host-only",
        flags=[*CURRENT, "--cuda-graph-trace=graph:host-only"],
        program=GRAPH,
    ),
    Config(
        "g-node",
        "CUDA graph step: --cuda-graph-trace=node",
        flags=[*CURRENT, "--cuda-graph-trace=node"],
        program=GRAPH,
    ),
]
# Checked for an exact window first: the candidates for what nsysgen generates.
CHECK_ORDER = [
    "current",
    "cuda",
    "minimal",
    "stop-shutdown",
    "repeat",
    "launch-start",
    "cuda-hw",
    "nvtx",
    "never",
    "g-current",
    "g-host",
    "g-node",
]

results: dict[str, object] = {"runs": [], "checks": {}, "ddp_runs": [], "errors": []}


def save() -> None:
    results["elapsed_s"] = round(time.monotonic() - START, 1)
    results["summary"] = summarize(results["runs"])  # type: ignore[arg-type]
    results["ddp_summary"] = summarize_ddp(results["ddp_runs"])  # type: ignore[arg-type]
    RESULT.write_text(json.dumps(results, indent=1, sort_keys=True))


def medians(path: Path) -> dict[str, object]:
    times = json.loads(path.read_text())["step_seconds"]
    pre = [t for i, t in enumerate(times) if WARMUP <= i < FIRST]
    post = [t for i, t in enumerate(times) if i > LAST]
    ms = lambda xs: round(statistics.median(xs) * 1000, 3)  # noqa: E731
    return {
        "outside": ms(pre + post),
        "pre": ms(pre),
        "post": ms(post),
        "window": ms(times[FIRST : LAST + 1]),
        # Interference from the shared host only adds time, so the low quantile of the steps
        # before the window shows the loop's own cost with less of the noise.
        "pre_p10": round(statistics.quantiles(pre, n=10)[0] * 1000, 3),
        "step_ms": [round(t * 1000, 3) for t in times],
    }


def window_env(opens: bool, ranks: str = "0") -> dict[str, str]:
    return {
        "NSYSGEN_PROFILE_FIRST_STEP": str(FIRST),
        "NSYSGEN_PROFILE_LAST_STEP": str(LAST),
        "NSYSGEN_PROFILE_RANKS": ranks if opens else "99",
    }


def tail(proc: subprocess.CompletedProcess[str] | None) -> str:
    return "" if proc is None else (proc.stdout[-600:] + proc.stderr[-900:])


def nsys(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([NSYS, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        return subprocess.CompletedProcess(error.cmd, 124, str(error.stdout), "timeout")


def wait_file(path: Path, proc: subprocess.Popen[str], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not path.exists():
        if proc.poll() is not None and not path.exists():
            time.sleep(0.5)
            if not path.exists():
                return
        time.sleep(0.2)


def run_launch(
    cfg: Config, program: list[str], env: dict[str, str], out: Path, session: str, timing: Path
) -> str:
    """nsys launch (+ nsys start): the interactive CLI instead of one `nsys profile`."""
    capture = [f for f in cfg.flags if f.startswith(("--capture-range", "--sample", "--cpuctxsw"))]
    app = [f for f in cfg.flags if f not in capture]
    notes = []
    if cfg.mode == "launch-start":
        started = nsys(
            "start",
            f"--session-new={session}",
            *capture,
            "--force-overwrite=true",
            f"--output={out}",
        )
        notes.append(f"start rc={started.returncode} {tail(started)}")
        where = f"--session={session}"
    else:
        where = f"--session-new={session}"
    launch = subprocess.Popen(
        [NSYS, "launch", where, *app, *program],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    wait_file(timing, launch, 150)
    try:
        text, _ = launch.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        text = "(nsys launch still running after the program's timing file appeared)"
    notes.append(f"launch rc={launch.returncode} {text[-600:]}")
    stopped = nsys("stop", f"--session={session}")
    notes.append(f"stop rc={stopped.returncode} {tail(stopped)[-300:]}")
    down = nsys("shutdown", f"--session={session}", "--kill=none")
    notes.append(f"shutdown rc={down.returncode} {tail(down)[-300:]}")
    if launch.poll() is None:
        launch.kill()
    return " | ".join(notes)


def run(cfg: Config, round_: int) -> dict[str, object]:
    timing = ROOT / f"t-{cfg.key}-{round_}.json"
    timing.unlink(missing_ok=True)
    out = ROOT / f"rep-{cfg.key}-{round_}"
    program = [
        sys.executable,
        str(SCRIPT),
        "--shape=launch",
        f"--steps={STEPS}",
        f"--timing-out={timing}",
        *cfg.program,
    ]
    env = {**os.environ, **window_env(cfg.opens), **cfg.env}
    record: dict[str, object] = {"key": cfg.key, "round": round_}
    began = time.monotonic()
    note = ""
    try:
        if cfg.mode == "none":
            proc = subprocess.run(program, env=env, capture_output=True, text=True, timeout=150)
            note = "" if proc.returncode == 0 else tail(proc)
        elif cfg.mode == "profile":
            command = [
                NSYS,
                "profile",
                *cfg.flags,
                "--force-overwrite=true",
                f"--output={out}",
                *program,
            ]
            proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=150)
            note = "" if proc.returncode == 0 else tail(proc)
        else:
            note = run_launch(
                cfg, program, env, out, f"abl{cfg.key.replace('-', '')}{round_}", timing
            )
    except subprocess.TimeoutExpired:
        note = "timeout"
    record["wall_s"] = round(time.monotonic() - began, 1)
    if timing.exists():
        record.update(medians(timing))
    else:
        record["error"] = note or "no timing file"
    if note and "error" not in record:
        record["note"] = note[-1500:]
    report = out.with_suffix(".nsys-rep")
    record["report_bytes"] = report.stat().st_size if report.exists() else 0
    log(
        cfg.key,
        round_,
        {k: record.get(k) for k in ("outside", "pre", "post", "wall_s", "report_bytes", "error")},
    )
    return record


def summarize(runs: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    by: dict[str, dict[int, dict[str, object]]] = {}
    for r in runs:
        if "outside" in r:
            by.setdefault(str(r["key"]), {})[int(r["round"])] = r  # type: ignore[call-overload]
    base = by.get("none", {})
    gbase = by.get("g-none", {})
    base_med = statistics.median([float(r["outside"]) for r in base.values()]) if base else None
    gbase_med = statistics.median([float(r["outside"]) for r in gbase.values()]) if gbase else None
    summary: dict[str, dict[str, object]] = {}
    for key, rounds in by.items():
        ref, ref_med = (gbase, gbase_med) if key.startswith("g-") else (base, base_med)
        values = [float(r["outside"]) for r in rounds.values()]
        entry: dict[str, object] = {
            "runs": len(values),
            "median_ms": round(statistics.median(values), 3),
            "run_medians_ms": values,
            "pre_ms": round(statistics.median(float(r["pre"]) for r in rounds.values()), 3),
            "post_ms": round(statistics.median(float(r["post"]) for r in rounds.values()), 3),
        }
        lows = [float(r["pre_p10"]) for r in rounds.values() if "pre_p10" in r]
        if lows:
            entry["pre_p10_ms"] = round(statistics.median(lows), 3)
        if ref_med:
            entry["overhead_pct"] = round((entry["median_ms"] / ref_med - 1) * 100, 2)  # type: ignore[operator]
            paired = [
                float(r["outside"]) / float(ref[n]["outside"])
                for n, r in rounds.items()
                if n in ref
            ]
            if paired:
                entry["paired_overhead_pct"] = round((statistics.median(paired) - 1) * 100, 2)
        summary[key] = entry
    return summary


def export(report: Path) -> Path:
    db = report.with_suffix(".sqlite")
    nsys(
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "--output",
        str(db),
        str(report),
        timeout=120,
    )
    return db


def query(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError as error:
            return [("error", str(error))]


def check(key: str, round_: int = ROUND_OFFSET) -> dict[str, object]:
    report = ROOT / f"rep-{key}-{round_}.nsys-rep"
    if not report.exists():
        return {"report": False}
    db = export(report)
    if not db.exists():
        return {"report": True, "sqlite": False}
    steps = query(
        db,
        "SELECT COALESCE(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN StringIds s "
        "ON e.textId = s.id WHERE COALESCE(e.text, s.value) LIKE 'step %'",
    )
    found: dict[str, object] = {
        "steps": sorted(int(str(t[0]).split()[1]) for t in steps if t[0] != "error"),
        "kernels": query(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0],
        "runtime_calls": query(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0],
    }
    # Kernels per step: by the launching API call's correlation id (the call inside the step's
    # NVTX range) and by GPU time (each step ends with a synchronize inside its range).
    steps_sql = (
        "SELECT COALESCE(e.text, s.value) AS name, e.start, e.end FROM NVTX_EVENTS e "
        "LEFT JOIN StringIds s ON e.textId = s.id WHERE COALESCE(e.text, s.value) LIKE 'step %'"
    )
    by_call = query(
        db,
        f"SELECT st.name, COUNT(k.correlationId) FROM ({steps_sql}) st "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.start >= st.start AND r.start < st.end "
        "JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
        "GROUP BY st.name",
    )
    by_time = query(
        db,
        f"SELECT st.name, COUNT(*) FROM ({steps_sql}) st JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
        "ON k.start >= st.start AND k.end <= st.end GROUP BY st.name",
    )
    for name, rows in (
        ("kernels_per_step_by_call", by_call),
        ("kernels_per_step_by_time", by_time),
    ):
        found[name] = (
            {str(r[0]).split()[1]: r[1] for r in rows} if rows and rows[0][0] != "error" else rows
        )
    tables = [t[0] for t in query(db, "SELECT name FROM sqlite_master WHERE type='table'")]
    for table in tables:
        if "GRAPH" in str(table).upper():
            found[f"rows_{table}"] = query(db, f"SELECT COUNT(*) FROM {table}")[0][0]
    return found


def judge_checks(checks: dict[str, dict[str, object]]) -> None:
    """Window exact: steps exactly FIRST..LAST and the kernel count of its reference."""
    for key, found in checks.items():
        ref = checks.get("current", {})
        want = list(range(FIRST, LAST + 1))
        if key == "never":
            found["exact"] = found.get("report") is False or found.get("kernels") in (0, None)
            continue
        if key == "g-node":
            # Node granularity records the graph's kernels: the steps, and the same kernel
            # count in each of them (a step cut at either end would hold fewer).
            per_step = found.get("kernels_per_step_by_time")
            found["exact"] = (
                found.get("steps") == want
                and isinstance(per_step, dict)
                and sorted(map(int, per_step)) == want
                and len(set(per_step.values())) == 1
                and found.get("kernels") == sum(per_step.values())
            )
            continue
        if key.startswith("g-"):
            # Graph granularity records whole graphs, not kernels: compare the steps only.
            found["exact"] = found.get("steps") == want
            continue
        found["exact"] = found.get("steps") == want and found.get("kernels") == ref.get("kernels")


def gpu_count() -> int:
    import torch  # only to count GPUs; the ranks are separate processes

    return int(torch.cuda.device_count())


def ddp(rounds: int) -> None:
    """2 ranks under DDP: neither, rank 0 or both under nsys (current flags). With one GPU they
    share it (gloo); with two each has its own (NCCL). --nccl rotates the order by the round."""
    results["ddp_gpus"] = gpu_count()
    for round_ in range(rounds):
        shift = round_ % len(DDP_SHAPES) if NCCL else 0
        for shape, recorded in DDP_SHAPES[shift:] + DDP_SHAPES[:shift]:
            if left() < 40:
                return
            port = 29600 + round_ * 10 + len(recorded)
            procs = []
            began = time.monotonic()
            for rank in (0, 1):
                timing = ROOT / f"ddp-{shape}-{round_}-{rank}.json"
                timing.unlink(missing_ok=True)
                program = [
                    sys.executable,
                    str(SCRIPT),
                    "--shape=launch",
                    f"--steps={STEPS}",
                    f"--timing-out={timing}",
                    "--ddp",
                ]
                env = {
                    **os.environ,
                    **window_env(True, ",".join(map(str, recorded)) or "99"),
                    "RANK": str(rank),
                    "LOCAL_RANK": str(rank),
                    "WORLD_SIZE": "2",
                    "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port),
                }
                out = ROOT / f"rep-ddp-{shape}-{round_}-{rank}"
                command = (
                    [
                        NSYS,
                        "profile",
                        *CURRENT,
                        "--force-overwrite=true",
                        f"--output={out}",
                        *program,
                    ]
                    if rank in recorded
                    else program
                )
                procs.append(
                    subprocess.Popen(
                        command,
                        env=env,
                        text=True,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                    )
                )
            record: dict[str, object] = {"shape": shape, "round": round_}
            for rank, proc in enumerate(procs):
                try:
                    # Never past the deadline: a hung collective must not eat the call.
                    text, _ = proc.communicate(timeout=max(5.0, min(180.0, left())))
                except subprocess.TimeoutExpired:
                    for other in procs:
                        other.kill()
                    text = "timeout"
                timing = ROOT / f"ddp-{shape}-{round_}-{rank}.json"
                if timing.exists():
                    record[f"rank{rank}"] = medians(timing)
                    record["backend"] = json.loads(timing.read_text()).get("backend")
                else:
                    record[f"rank{rank}_error"] = text[-1500:]
            record["wall_s"] = round(time.monotonic() - began, 1)
            results["ddp_runs"].append(record)  # type: ignore[union-attr]
            brief = {k: v for k, v in record.items() if k.startswith("rank")}
            log("ddp", shape, round_, json.dumps(brief)[:300])
            save()


def summarize_ddp(runs: list[dict[str, object]]) -> dict[str, object]:
    by: dict[str, list[float]] = {}
    per_rank: dict[str, list[list[float]]] = {}
    lows: dict[str, list[float]] = {}
    backends: dict[str, set[str]] = {}
    for r in runs:
        ranks = [r.get("rank0"), r.get("rank1")]
        if all(isinstance(x, dict) for x in ranks):
            shape = str(r["shape"])
            # The job's step: the slower rank's (both wait in each all-reduce anyway).
            by.setdefault(shape, []).append(max(float(x["outside"]) for x in ranks))  # type: ignore[index]
            per_rank.setdefault(shape, []).append([float(x["outside"]) for x in ranks])  # type: ignore[index]
            if all("pre_p10" in x for x in ranks):  # type: ignore[operator]
                lows.setdefault(shape, []).append(max(float(x["pre_p10"]) for x in ranks))  # type: ignore[index]
            backends.setdefault(shape, set()).add(str(r.get("backend")))
    base = statistics.median(by["neither"]) if by.get("neither") else None
    out: dict[str, object] = {}
    for shape, values in by.items():
        med = statistics.median(values)
        entry: dict[str, object] = {
            "runs": len(values),
            "median_job_step_ms": round(med, 3),
            "run_medians_ms": values,
            "overhead_pct": round((med / base - 1) * 100, 2) if base else None,
            # Each rank's median step outside the window, median over the runs.
            "rank_median_ms": [
                round(statistics.median(run[k] for run in per_rank[shape]), 3) for k in (0, 1)
            ],
            "backends": sorted(backends[shape]),
        }
        if lows.get(shape):
            # The slower rank's p10 before the window: the loop's own cost, less the noise.
            entry["median_job_pre_p10_ms"] = round(statistics.median(lows[shape]), 3)
        out[shape] = entry
    return out


def ddp_first(phases: list[str]) -> None:
    """DDP first when PHASES names it first (a short call must not lose it to the deadline)."""
    if phases[0] == "ddp":
        ddp(int(os.environ.get("DDP_ROUNDS", "3")))
        phases.remove("ddp")


def check_all(matrix: list[Config]) -> None:
    checks: dict[str, dict[str, object]] = {}
    for key in CHECK_ORDER:
        if left() < 30 or key not in {c.key for c in matrix}:
            continue
        checks[key] = check(key)
        judge_checks(checks)
        results["checks"] = checks
        log("check", key, checks[key])
        save()


def recheck(rounds: range) -> None:
    """The window of RECHECK's configurations in every round after the first."""
    keys = [k for k in os.environ.get("RECHECK", "g-node").split(",") if k]
    found: dict[str, dict[str, object]] = results.setdefault("rechecks", {})  # type: ignore[assignment]
    for round_ in rounds:
        for key in keys:
            if left() < 30 or round_ == ROUND_OFFSET:
                continue
            check_ = check(key, round_)
            judge_checks({key: check_})
            found[f"{key}/{round_}"] = check_
            log("recheck", key, round_, check_)
            save()


def selected() -> list[Config]:
    """ONLY's configurations in ONLY's order, else the whole matrix."""
    only = [k for k in os.environ.get("ONLY", "").split(",") if k]
    by_key = {c.key: c for c in MATRIX}
    return [by_key[k] for k in only] if only else MATRIX


def run_round(matrix: list[Config], round_: int) -> None:
    """Every configuration once, rotated by the round unless ROTATE=0."""
    shift = round_ % len(matrix) if ROTATE else 0
    for cfg in matrix[shift:] + matrix[:shift]:
        if left() < 25:
            break
        results["runs"].append(run(cfg, round_))  # type: ignore[union-attr]
        save()


def main_nccl() -> int:
    """--nccl: the DDP phase only, on 2 GPUs, NCCL checked."""
    results["mode"] = "nccl"
    results["current_flags"] = CURRENT
    results["nsys"] = nsys("--version").stdout.strip()
    results["host"] = socket.gethostname()
    results["window"] = {"steps": STEPS, "first": FIRST, "last": LAST, "warmup": WARMUP}
    results["nproc"] = os.cpu_count()
    gpus = gpu_count()
    if gpus < 2:
        results["errors"].append(f"--nccl needs 2 GPUs, found {gpus}")  # type: ignore[union-attr]
        save()
        log("--nccl needs 2 GPUs, found", gpus)
        return 2
    log("current flags:", CURRENT)
    if os.environ.get("WARMUP", "1") != "0":
        subprocess.run([sys.executable, str(SCRIPT), "--shape=launch", "--steps=20"], check=False)
    ddp(int(os.environ.get("DDP_ROUNDS", "4")))
    not_nccl = [
        f"{r['shape']}/{r['round']}: {r.get('backend')}"
        for r in results["ddp_runs"]  # type: ignore[attr-defined]
        if r.get("backend") != "nccl"
    ]
    if not_nccl:
        results["errors"].append(f"runs not on NCCL: {not_nccl}")  # type: ignore[union-attr]
    save()
    print(json.dumps(results["ddp_summary"], indent=1))
    return 1 if not_nccl else 0


def main() -> int:
    if NCCL:
        return main_nccl()
    phases = os.environ.get("PHASES", "matrix,check,ddp,extra").split(",")
    matrix = selected()
    results["current_flags"] = CURRENT
    results["nsys"] = nsys("--version").stdout.strip()
    results["host"] = socket.gethostname()
    results["window"] = {"steps": STEPS, "first": FIRST, "last": LAST, "warmup": WARMUP}
    results["nproc"] = os.cpu_count()
    log("current flags:", CURRENT)
    # Warm the page cache, the driver and the GPU clocks before anything is timed.
    subprocess.run([sys.executable, str(SCRIPT), "--shape=launch", "--steps=20"], check=False)
    ddp_first(phases)
    # Round 0, then the window checks on its reports, then the other rounds: a run cut short
    # by the deadline still has every configuration once and its window check.
    rounds = range(ROUND_OFFSET, ROUND_OFFSET + ROUNDS) if "matrix" in phases else range(0)
    for round_ in rounds:
        run_round(matrix, round_)
        if round_ == ROUND_OFFSET and "check" in phases:
            check_all(matrix)
    round_ = ROUND_OFFSET + len(rounds)
    if "recheck" in phases:
        recheck(rounds)
    if "ddp" in phases:
        ddp(int(os.environ.get("DDP_ROUNDS", "3")))
    if "extra" in phases:
        while left() > 60:
            for cfg in matrix:
                if left() < 25:
                    break
                results["runs"].append(run(cfg, round_))  # type: ignore[union-attr]
                save()
            round_ += 1
    save()
    print(json.dumps(results["summary"], indent=1))
    print(json.dumps(results["ddp_summary"], indent=1))
    print(json.dumps(results["checks"], indent=1))
    print(json.dumps(results.get("rechecks", {}), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
