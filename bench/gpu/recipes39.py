"""Issue 39, GPU machine: `nsysgen analyze` against nsys's own recipes on the same reports, at
the largest set that fits the machine's disk and the run's time (bench/gpu/recipes39.sh runs
this; one JSON of results on stdout).

    python3 bench/gpu/recipes39.py --nsys NSYS --work DIR [--n N] [--budget-s 200] [REPORT ...]

REPORT: real .nsys-rep reports (default: the committed tests/data/gpu/*.nsys-rep), repeated to N
copies named as nsysgen's wrapper names one report per rank (STEM_job39_rankI.nsys-rep). N (0:
auto) is what the time budget allows after one report's export is timed, capped by MAX_N and by
half the free disk. Every tool reads a fresh copy of the same set (no export left by another):

- floor: `nsys export --type sqlite` with analyze's switches, one report after another, on a
  sample of FLOOR_SAMPLE reports; the floor for N is its mean times N (an estimate, marked so);
- `nsysgen analyze --workers CORES` (its local Dask cluster; `--serial` where Dask is not
  installed, said in the result), then the same command again (results cached);
- `nsys recipe nccl_sum`, `nvtx_gpu_proj_sum`, `cuda_gpu_kern_sum`, in turn on one fresh copy
  (the first one exports the reports, as a user's first recipe does; --csv), then `nsysgen
  analyze` on that copy too (it reads exports the recipes left, where they are SQLite);

each timed whole, with its peak memory: the largest process of its tree (getrusage's
RUSAGE_CHILDREN of a wrapper process: the figure `/usr/bin/time -v` prints as "Maximum resident
set size") and, where psutil is installed (it comes with Dask), each process's own high-water
mark (bench/tree_memory.py), summed up per kind: Dask's workers, and the others (the command
and its other children). And what each answers: the files it wrote, their rows.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RECIPES = ("nccl_sum", "nvtx_gpu_proj_sum", "cuda_gpu_kern_sum")
MAX_N = 500
FLOOR_SAMPLE = 8
TIMEOUT_S = 150  # one command at most: the whole run must fit a device call
DEADLINE = [time.monotonic() + 330.0]  # the whole run's (--deadline-s): later commands are cut
# Runs one command; prints its wall time, exit status and the largest RSS of its process tree.
_MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=float(sys.argv[1]))
wall = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": round(wall, 2), "exit": proc.returncode, "max_rss_mb": round(rss, 1),
                  "stdout": proc.stdout.splitlines()[:4], "stderr": proc.stderr[-800:]}))
"""
ANSWERS = {
    "nsysgen": "per rank x step: compute, communication split into waiting for the last peer and "
    "transfer, host gaps, idle; which rank was late on which steps and who waited; NCCL time and "
    "bus bandwidth per collective and message size (against the fabric with --cluster); a "
    "verdict; summary.json, CSVs, PNGs and one report.html",
    "nccl_sum": "NCCL API ranges (NVTX) summed by name over all reports: count, total, mean, "
    "median, min, max, stddev of their CPU-side durations; no rank, step or message size",
    "nvtx_gpu_proj_sum": "each NVTX range's GPU projection (first to last GPU work its calls "
    "launched), summed by range name over all reports: no per-rank or per-step view, no lateness",
    "cuda_gpu_kern_sum": "GPU kernels summed by name over all reports: instances, total, mean, "
    "median, min, max, stddev",
}


def measure(command: list[str]) -> dict[str, Any]:
    timeout = min(TIMEOUT_S, DEADLINE[0] - time.monotonic())
    if timeout < 5:
        return {"command": [Path(command[0]).name, *command[1:4]], "exit": None,
                "error": "not run: the run's deadline had passed"}  # fmt: skip
    wrapper = [sys.executable, "-c", _MEASURE, str(timeout), *command]
    proc = subprocess.Popen(wrapper, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = None
    if importlib.util.find_spec("psutil") is not None:
        sys.path.insert(0, str(HERE.parent))
        from tree_memory import TreePeak  # type: ignore[import-not-found,unused-ignore]

        with TreePeak(proc.pid) as peak:
            out, err = proc.communicate()
    else:
        out, err = proc.communicate()
    try:
        result: dict[str, Any] = json.loads(out)
    except ValueError:  # the wrapper itself failed: a timeout
        return {
            "command": command[:4],
            "exit": None,
            "error": f"after {timeout:.0f} s: {err[-600:]}",
        }
    result["command"] = [Path(command[0]).name, *command[1:4]]
    if peak is not None:  # "other": the command itself and its children but Dask's workers
        result["peak_rss_mb"] = {
            kind: {"processes": len(v), "max": max(v), "sum": round(sum(v), 1)}
            for kind, v in peak.by_kind().items()
            if kind != "main"  # the wrapper
        }
    return result


def switches(nsys: str) -> list[str]:
    """The export switches nsysgen analyze asks for, where this nsys has them (NCCL payloads,
    advanced NCCL tracing's tables): probed here, as analyze probes them."""
    proc = subprocess.run([nsys, "export", "--help"], capture_output=True, text=True, check=False)
    text = proc.stdout + proc.stderr
    return [p for s in ("--include-blobs", "--include-json") if s in text for p in (s, "true")]


def export(nsys: str, report: Path) -> float:
    """Seconds `nsys export` takes for one report, with the switches analyze asks for."""
    target = report.with_name(f"floor-{report.stem}.sqlite")
    start = time.perf_counter()
    subprocess.run(
        [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", *switches(nsys),
         "--output", str(target), str(report)],
        check=True, capture_output=True,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    target.unlink()
    return seconds


def copies(sources: list[Path], folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True)
    made = []
    for i in range(n):
        source = sources[i % len(sources)]
        made.append(folder / f"{source.stem}_job39_rank{i}.nsys-rep")
        shutil.copyfile(source, made[-1])
    # Written out now, not while the next measured command runs (1.3 GB at 2,000 copies):
    # every tool starts from the same state.
    os.sync()
    return made


def choose_n(
    args: argparse.Namespace, one_export_s: float, sizes: tuple[int, int], dask: bool
) -> int:
    """The largest N that fits: the time budget (about four export passes of N reports over
    the cores; without Dask, analyze exports them one after another within one command's
    limit) and half the free disk (three copies of the reports and their exports)."""
    if args.n:
        return int(args.n)
    cap = int(args.max_n)
    cores = os.cpu_count() or 1
    one = max(one_export_s, 0.05)
    by_time = int(args.budget_s * cores / (4 * one))
    if not dask:
        by_time = min(by_time, int(0.6 * TIMEOUT_S / one))
    free = shutil.disk_usage(args.work).free
    by_disk = int(free / 2 / (3 * sum(sizes)))
    return max(min(FLOOR_SAMPLE, cap), min(cap, by_time, by_disk))


def analyze(folder: Path, out: Path, nsys: str, dask: bool) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    where = ["--workers", str(cores)] if dask else ["--serial"]
    command = [sys.executable, "-m", "nsysgen", "analyze", str(folder), "--nsys", nsys,
               "--output", str(out), *where]  # fmt: skip
    return measure(command)


def wrote(folder: Path) -> dict[str, Any]:
    """What a tool wrote: its files, and the data rows of each CSV."""
    found: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file():
            entry: dict[str, Any] = {"bytes": path.stat().st_size}
            if path.suffix == ".csv":
                with path.open(newline="") as handle:
                    entry["rows"] = max(0, sum(1 for _ in csv.reader(handle)) - 1)
            found[str(path.relative_to(folder))] = entry
    return found


def summary_answer(out: Path) -> dict[str, Any]:
    path = out / "summary.json"
    if not path.is_file():
        return {}
    summary = json.loads(path.read_text())
    return {
        "ranks": len(summary["ranks"]),
        "steps": sum(len(r["steps"]) for r in summary["ranks"]),
        "stragglers": summary["stragglers"][:3],
        "nccl_sizes": len(summary["nccl_by_size"]),
        "verdict": (summary.get("verdict") or {}).get("text"),
        "report_html_bytes": (out / "report.html").stat().st_size
        if (out / "report.html").is_file()
        else None,
    }


def against(folder: Path, args: argparse.Namespace, dask: bool) -> dict[str, Any]:
    """`nsysgen analyze` of the code in --baseline-code (an older checkout) and of this one,
    in turn, twice each, over the same exports: every reduced result is removed before each run,
    so both read and reduce every report (the exports, made by the first run, stay)."""
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    folder, work = folder.resolve(), args.work.resolve()
    saved = os.environ.get("PYTHONPATH", "")
    for _ in range(2):
        for name, code in (("baseline", str(args.baseline_code)), ("this", str(REPO))):
            for cached in folder.glob("*.nsysgen-reduced.json"):
                cached.unlink()
            # `python -m` puts the working folder first on the path: run from the code's own.
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (code, saved) if p)
            here = Path.cwd()
            os.chdir(code)
            try:
                runs[name].append(analyze(folder, work / f"against-{name}", args.nsys, dask))
            finally:
                os.environ["PYTHONPATH"] = saved
                os.chdir(here)
    found: dict[str, Any] = {"runs": runs}
    times = {k: [r.get("seconds") for r in v] for k, v in runs.items()}
    if all(t is not None for v in times.values() for t in v):
        best = {k: min(t for t in v if t is not None) for k, v in times.items()}
        found["this_over_baseline_best"] = round(best["this"] / best["baseline"], 3)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path)
    parser.add_argument("--nsys", required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=200.0)
    parser.add_argument("--max-n", type=int, default=MAX_N)
    parser.add_argument("--deadline-s", type=float, default=330.0)
    parser.add_argument("--baseline-code", type=Path, help="an older checkout, timed beside")
    args = parser.parse_args()
    DEADLINE[0] = time.monotonic() + args.deadline_s
    sources = args.reports or sorted((REPO / "tests" / "data" / "gpu").glob("*.nsys-rep"))
    args.work.mkdir(parents=True, exist_ok=True)
    dask = importlib.util.find_spec("distributed") is not None
    cal = copies(sources, args.work / "calibrate", 1)[0]
    one = export(args.nsys, cal)
    # Named with its suffix: nsys 2025.3.1 writes --output's name as given.
    probe = args.work / "calibrate" / "probe.sqlite"
    subprocess.run([args.nsys, "export", "--type", "sqlite", "--force-overwrite", "true",
                    "--output", str(probe), str(cal)], check=True, capture_output=True)  # fmt: skip
    export_bytes = probe.stat().st_size
    n = choose_n(args, one, (cal.stat().st_size, export_bytes), dask)
    result: dict[str, Any] = {
        "reports": n, "sources": [s.name for s in sources], "cores": os.cpu_count(),
        "dask": dask, "report_bytes": cal.stat().st_size * n, "export_bytes_each": export_bytes,
        "one_export_s": round(one, 2), "answers": ANSWERS, "runs": {},
    }  # fmt: skip
    floor = copies(sources, args.work / "floor", min(FLOOR_SAMPLE, n))
    per = sum(export(args.nsys, report) for report in floor) / len(floor)
    result["floor_export_in_turn_s"] = {
        "per_report": round(per, 3),
        "estimate_for_n": round(per * n, 1),
    }
    runs = result["runs"]
    fresh = args.work / "nsysgen"
    copies(sources, fresh, n)
    runs["nsysgen analyze"] = analyze(fresh, args.work / "nsysgen-out", args.nsys, dask)
    runs["nsysgen analyze, cached rerun"] = analyze(
        fresh, args.work / "nsysgen-out", args.nsys, dask
    )
    result["nsysgen_answer"] = summary_answer(args.work / "nsysgen-out")
    if args.baseline_code is not None:
        result["against_baseline_code"] = against(fresh, args, dask)
    shutil.rmtree(fresh)
    shared = args.work / "recipes"
    copies(sources, shared, n)
    for recipe in RECIPES:
        out = args.work / f"out-{recipe}"
        runs[f"nsys recipe {recipe}"] = measure(
            [args.nsys, "recipe", recipe, "--input", str(shared), "--output", str(out),
             "--force-overwrite", "--csv"]
        )  # fmt: skip
        runs[f"nsys recipe {recipe}"]["wrote"] = wrote(out)
    left = sorted({p.name.split(".", 1)[-1] for p in shared.iterdir() if "_job39_rank" in p.name})
    result["left_beside_reports_by_recipes"] = left
    runs["nsysgen analyze, after the recipes"] = analyze(
        shared, args.work / "after-out", args.nsys, dask
    )
    seconds = {k: v.get("seconds") for k, v in runs.items()}
    recipes = [seconds[f"nsys recipe {r}"] for r in RECIPES]
    if all(s is not None for s in recipes) and seconds["nsysgen analyze"]:
        total = sum(s for s in recipes if s is not None)
        result["recipes_total_s"] = round(total, 2)
        result["nsysgen_over_recipes"] = round(seconds["nsysgen analyze"] / total, 2)
        result["nsysgen_over_floor_estimate"] = round(seconds["nsysgen analyze"] / (per * n), 2)
        again = seconds["nsysgen analyze, after the recipes"]
        if again:  # a second run from nothing (the recipes leave no SQLite): the spread
            result["nsysgen_after_recipes_over_recipes"] = round(again / total, 2)
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
