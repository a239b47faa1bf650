"""Compile and plan cost against the job's size, side by side in one run. Prints a Markdown table.

    python bench/bench_scale.py [--repeat N]

Each row is one `nsysgen` command run as its own process (wall time, imports included, and the
process's peak RSS), for 2 nodes and for 100,000 nodes of p5 (8 GPUs each), with
capture.ranks=all (800,000 recorded tasks) and one_per_node; the issue's own case (100,000 x 64
GPUs, ranks=all) is the last row. The runs of one command are interleaved across sizes (2, 100k,
2, 100k, ...) so that a change in the machine's load hits both alike; the ratio is of medians.
Goal (issue 18): 100,000 nodes within 1.2x of 2 nodes, peak RSS under 200 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# Runs one command and prints its wall time and peak RSS (the child's alone: this process is new).
_MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.perf_counter() - start
if proc.returncode != 0:
    sys.exit(proc.stderr)
print(json.dumps([wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024]))
"""

SIZES = {"2 nodes": ["cluster.nodes=2"], "100,000 nodes": ["cluster.nodes=100000"]}
COMMANDS = {
    "plan, ranks=all": ["plan", "capture.ranks=all"],
    "plan, one_per_node": ["plan", "capture.ranks=one_per_node"],
    "compile, ranks=all": ["capture.ranks=all"],
    "compile, one_per_node": ["capture.ranks=one_per_node"],
}


def measure(args: list[str], work: Path) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, sys.executable, "-m", "nsysgen", *args],
        cwd=work, check=True, capture_output=True, text=True,
    )  # fmt: skip
    wall, rss = json.loads(out.stdout)
    return float(wall), float(rss)


def compile_args(command: list[str], work: Path, run: int) -> list[str]:
    if command[0] == "plan":
        return command
    return [*command, f"output_dir={work / f'out{run}'}"]  # a fresh folder: no "unchanged" path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nsysgen-bench-scale-"))
    print(f"load before: {os.getloadavg()}, {os.cpu_count()} CPUs, repeat {args.repeat}\n")
    print("| command (cluster=p5) | 2 nodes | 100,000 nodes | time ratio | peak RSS, 2 / 100k |")
    print("|---|---|---|---|---|")
    run = 0
    try:
        rows = dict(COMMANDS)
        rows["compile, ranks=all, 64 GPUs/node"] = ["capture.ranks=all", "cluster.gpus_per_node=64"]
        for name, command in rows.items():
            found: dict[str, list[tuple[float, float]]] = {size: [] for size in SIZES}
            for _ in range(args.repeat):
                for size, extra in SIZES.items():
                    run += 1
                    full = compile_args([*command, "cluster=p5", *extra], work, run)
                    found[size].append(measure(full, work))
                    shutil.rmtree(work / f"out{run}", ignore_errors=True)
            small, large = (found[size] for size in SIZES)
            t_small = statistics.median(w for w, _ in small)
            t_large = statistics.median(w for w, _ in large)
            rss_small, rss_large = max(r for _, r in small), max(r for _, r in large)
            print(f"| {name} | {t_small:.2f} s | {t_large:.2f} s | {t_large / t_small:.2f}x | "
                  f"{rss_small:.0f} / {rss_large:.0f} MB |", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload after: {os.getloadavg()}; peak RSS is the max over the runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
