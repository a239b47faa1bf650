"""`nsysgen analyze` at the scale people profile at (issue 39): a thousand reports on a local
Dask cluster, against reading the same exports one after another. Prints a Markdown table
(BENCHMARKS.md, "Issue 39") and, with --json, every figure.

    python bench/bench_analyze_scale.py [--counts 100,1000] [--workers 2] [--kinds synthetic,real]

Two kinds of reports, each a job's .sqlite exports, one per rank:
- synthetic: bench/synth_export.py's, shaped like nsys 2025.3.1 exports of a data-parallel job
  (KERNELS short kernels and three NCCL all-reduces per step, NCCL payloads, 8 steps), with a
  planted straggler (rank 2/3 of the way up, late by 30 ms on 3 of 6 judged steps) and a planted
  slow message size (1 MiB);
- real: the H200 exports of tests/data/gpu/steps17 (the "slow" job: 16,192 kernels per report,
  gloo, rank 1 sleeping 40 ms each step), repeated: the slow rank's report once, as the rank
  2/3 of the way up, and every other rank a copy of rank 0's (which waited for it), each named
  s17x_job2_rankR.sqlite.

Per kind and count, in one run, on the same files (just written: in the page cache for both):
- floor: every export read whole with Python's sqlite3, one after another: every row of every
  table fetched (SELECT * per table). For .sqlite inputs this stands in for the issue's "exporting
  the same reports one after another" (which needs nsys and .nsys-rep files: the GPU machine's
  bench/gpu/recipes39.sh measures that one);
- `python -m nsysgen analyze FOLDER --workers N --output OUT`, a process of its own, timed whole
  (imports, cluster start, map, reduction, CSVs, PNGs, report.html), with the peak RSS of it and
  of each of its Dask workers (bench/tree_memory.py: the kernel's high-water mark per process);
- the same command again: every result from the cache;
- OUT/report.html: its size, and the seconds a headless chromium (Debian's, driven by
  Playwright: scripts/browser.py) takes to open it, to its load event.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

import synth_export  # noqa: E402  (bench/ is scripts, not a package)
from tree_memory import TreePeak  # noqa: E402

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"
KERNELS = 250  # per step: a synthetic report of ~0.4 MB, 2,000 kernels
SLOW_SIZE = 1 << 20
MB = 1 << 20


def planted(count: int) -> dict[int, dict[int, float]]:
    return {count * 2 // 3: {10: 30.0, 12: 30.0, 13: 30.0}}


def make_reports(kind: str, count: int, folder: Path) -> None:
    if kind == "synthetic":
        shape = synth_export.Shape(ranks=count, kernels=KERNELS, kernel_us=(20, 60))
        synth_export.job(folder, shape, synth_export.Plant(planted(count), SLOW_SIZE))
        return
    folder.mkdir(parents=True)
    late = next(iter(planted(count)))
    for rank in range(count):
        source = STEPS17 / f"s17-slow_job2_rank{int(rank == late)}.sqlite"
        shutil.copyfile(source, folder / f"s17x_job2_rank{rank}.sqlite")


def read_whole(exports: list[Path]) -> int:
    """The floor: every row of every table of every export, one export after another."""
    rows = 0
    for export in exports:
        db = sqlite3.connect(f"file:{export}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                for _ in db.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - its own names
                    rows += 1
        finally:
            db.close()
    return rows


def analyze(folder: Path, out: Path, workers: int) -> dict[str, Any]:
    """One `nsysgen analyze` process: wall time, peak RSS per process, its first lines."""
    command = [sys.executable, "-m", "nsysgen", "analyze", str(folder), "--output", str(out)]
    command += ["--workers", str(workers)] if workers > 1 else ["--serial"]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with TreePeak(proc.pid) as peak:
        stdout, stderr = proc.communicate()
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: a regression or straggler verdict is not a failure
        print(f"analyze failed ({proc.returncode}):\n{stderr[-3000:]}", file=sys.stderr)
    return {
        "seconds": round(seconds, 2),
        "exit": proc.returncode,
        "peak_rss_mb": peak.by_kind(),
        "first_lines": stdout.splitlines()[:3],
    }


def open_in_browser(report: Path) -> float | None:
    """Seconds to the load event in headless chromium, or None without Playwright/chromium."""
    from scripts.browser import chromium, open_report

    if chromium() is None:
        return None
    seconds, _ = open_report(report)
    return round(seconds, 2)


def measure(kind: str, count: int, workers: int, work: Path, browser: bool) -> dict[str, Any]:
    folder, out = work / f"{kind}-{count}", work / f"{kind}-{count}-out"
    start = time.perf_counter()
    make_reports(kind, count, folder)
    made = time.perf_counter() - start
    exports = sorted(folder.glob("*.sqlite"))
    size = sum(e.stat().st_size for e in exports)
    start = time.perf_counter()
    rows = read_whole(exports)
    floor = time.perf_counter() - start
    first = analyze(folder, out, workers)
    second = analyze(folder, out, workers)
    html = out / "report.html"
    found = out / "summary.json"
    summary = json.loads(found.read_text()) if found.is_file() else {"stragglers": []}
    result = {
        "kind": kind,
        "reports": count,
        "workers": workers,
        "bytes": size,
        "rows": rows,
        "made_s": round(made, 2),
        "floor_s": round(floor, 2),
        "analyze": first,
        "analyze_cached": second,
        "ratio_to_floor": round(first["seconds"] / floor, 2),
        "s_per_report": round(first["seconds"] / count, 4),
        "s_per_gb": round(first["seconds"] / (size / 1e9), 1),
        "html_bytes": html.stat().st_size if html.is_file() else None,
        "browser_open_s": open_in_browser(html) if browser and html.is_file() else None,
        "stragglers": [s["rank"] for s in summary["stragglers"]][:4],
    }
    shutil.rmtree(folder)
    shutil.rmtree(out)
    return result


def row(r: dict[str, Any]) -> str:
    peaks = r["analyze"]["peak_rss_mb"]
    workers = ", ".join(f"{v:.0f}" for v in peaks.get("worker", [])) or "-"
    html = f"{r['html_bytes'] / MB:.2f} MB" if r["html_bytes"] else "none"
    opened = f"{r['browser_open_s']:.2f} s" if r["browser_open_s"] is not None else "not measured"
    return (
        f"| {r['kind']} | {r['reports']} | {r['bytes'] / 1e9:.3f} GB | {r['floor_s']:.1f} s | "
        f"{r['analyze']['seconds']:.1f} s ({r['ratio_to_floor']:.2f}x) | "
        f"{r['s_per_report'] * 1000:.0f} ms | {r['s_per_gb']:.0f} s | {workers} MB | "
        f"{peaks.get('main', [0])[0]:.0f} MB | {r['analyze_cached']['seconds']:.1f} s | "
        f"{html} | {opened} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kinds", default="synthetic,real")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nsysgen-bench-analyze-scale-"))
    print(f"load before: {os.getloadavg()}, {os.cpu_count()} CPUs, {args.workers} workers\n")
    print(
        "| kind | reports | exports | floor: read whole, in turn | nsysgen analyze (x floor) | "
        "per report | per GB | peak RSS per worker | peak RSS, main process | cached rerun | "
        "report.html | chromium opens it |"
    )
    print("|---" * 12 + "|")
    results = []
    try:
        for kind in args.kinds.split(","):
            for count in map(int, args.counts.split(",")):
                results.append(measure(kind, count, args.workers, work, not args.no_browser))
                print(row(results[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
