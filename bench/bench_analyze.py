"""`nsysgen analyze` on Dask: throughput, speed-up per worker, memory per worker, the export
cache. Prints a Markdown table (BENCHMARKS.md, "Analysis on Dask").

    python bench/bench_analyze.py REPORT.nsys-rep --nsys NSYS [--counts 16,64,256]

REPORT is one real CPU report; the benchmark analyses copies of it (each copy its own report,
its own export). Per count and worker count, on a local Dask cluster of that many single-thread
workers, timed without the cluster's start-up: the map as a first analysis runs it (nsys export,
then reduce, per report) and over cached exports (read + reduce); the peak RSS of every worker
(ru_maxrss, read in the worker); then a first run of the
whole command (every report exported by nsys, reduced on a cluster, plots drawn) against a
second one over the same reports (results and plots from the cache), and the same for the map
step alone.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from distributed import Client, LocalCluster

from nsysgen.analyze.read.cache import key_file, report_key
from nsysgen.analyze.read.export import export_sqlite
from nsysgen.analyze.read.map import (
    Progress,
    Task,
    Where,
    gather_reports,
    map_reports,
    plan_tasks,
    run_task,
)


def reset_peak_rss() -> None:
    """Start the worker's peak RSS afresh (Linux: "5" to clear_refs resets VmHWM). A worker
    forked from a big parent would otherwise report the parent's size as its own peak."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    """The worker's peak RSS since reset_peak_rss (VmHWM, kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def copies(
    report: Path, export: Path | None, folder: Path, count: int, nsys: str | None = None
) -> list[Task]:
    """`count` copies of the report, each with a copy of its export (the task only reduces), or
    without (export=None: the task runs `nsys export` first, as a first analysis does)."""
    folder.mkdir(parents=True)
    tasks = []
    for i in range(count):
        copy = folder / f"bench_rank{i}.nsys-rep"
        shutil.copy(report, copy)
        if export is not None:
            shutil.copy(export, copy.with_suffix(".sqlite"))
            key_file(copy).write_text(json.dumps(report_key(copy), sort_keys=True))
        tasks.append(Task(copy, copy.with_suffix(".sqlite"), None if export else nsys))
    return tasks


def mapped(tasks: list[Task], workers: int, warm_up: list[Task]) -> tuple[float, list[float]]:
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            dashboard_address=":0",
            scheduler_kwargs={"dashboard": False},
            silence_logs=40,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        client.gather(client.map(run_task, warm_up[:workers], pure=False))  # imports, warm-up
        client.run(reset_peak_rss)
        start = time.perf_counter()
        # As `nsysgen analyze` gathers: each result as it comes, then released on the worker.
        gather_reports(client, tasks, Progress(len(tasks), io.StringIO()))
        elapsed = time.perf_counter() - start
        rss = client.run(peak_rss_mb)
    return elapsed, sorted(rss.values())


def cli(folder: Path, nsys: str, workers: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "nsysgen", "analyze", str(folder), "--nsys", nsys,
         "--workers", str(workers), "--output", str(folder / "analysis")],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - start


def map_only(folder: Path, nsys: str) -> float:
    start = time.perf_counter()
    tasks = plan_tasks(folder, nsys)
    map_reports(tasks, Where(workers=2), Progress(len(tasks), io.StringIO()))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("report", type=Path)
    parser.add_argument("--nsys", required=True)
    parser.add_argument("--counts", default="16,64,256")
    parser.add_argument("--cache-count", type=int, default=16)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nsysgen-bench-analyze-"))
    try:
        base = work / "base" / args.report.name
        base.parent.mkdir()
        shutil.copy(args.report, base)
        export = export_sqlite(base, args.nsys, force=True)
        print(f"load before: {os.getloadavg()}, {os.cpu_count()} CPUs, report "
              f"{args.report.stat().st_size} B, export {export.stat().st_size} B\n")  # fmt: skip
        print("| work per report | reports | workers | map time | reports/s | speed-up | "
              "peak RSS per worker |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        warm = copies(args.report, None, work / "warm", 2, args.nsys)
        modes = {"nsys export + reduce": None, "reduce (export cached)": export}
        for mode, cached in modes.items():
            for count in map(int, args.counts.split(",")):
                one = 0.0
                for workers in (1, 2):
                    folder = work / f"{'c' if cached else 'x'}{count}-{workers}"
                    tasks = copies(args.report, cached, folder, count, args.nsys)
                    elapsed, rss = mapped(tasks, workers, warm)
                    one = one or elapsed
                    print(f"| {mode} | {count} | {workers} | {elapsed:.2f} s | "
                          f"{count / elapsed:.1f} | {one / elapsed:.2f}x | "
                          f"{', '.join(f'{r:.0f}' for r in rss)} MB |", flush=True)  # fmt: skip
                    shutil.rmtree(folder)
        # The cache: the whole command, first run (nsys exports every report, a Dask cluster
        # reduces them, plots are drawn), then a second one over the same reports (results and
        # plots from the cache); then the map step alone (plan_tasks + map_reports), likewise.
        folder = work / "cache"
        folder.mkdir()
        for i in range(args.cache_count):
            shutil.copy(args.report, folder / f"bench_rank{i}.nsys-rep")
        whole_first = cli(folder, args.nsys, 2)
        whole_second = cli(folder, args.nsys, 2)
        print(f"\ncache, {args.cache_count} reports, whole command (`--workers 2`: cluster "
              f"start-up, imports, plots included): first {whole_first:.2f} s, second "
              f"{whole_second:.2f} s, ratio {whole_first / whole_second:.1f}x")  # fmt: skip
        for pattern in ("*.sqlite", "*.json"):
            for f in folder.glob(pattern):
                f.unlink()
        map_first = map_only(folder, args.nsys)
        map_second = map_only(folder, args.nsys)
        print(f"map only (plan_tasks + map_reports, 2 workers): first {map_first:.2f} s "
              f"({args.cache_count / map_first:.1f} reports/s), second {map_second:.3f} s, "
              f"ratio {map_first / map_second:.1f}x")  # fmt: skip
        print(f"load after: {os.getloadavg()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
