"""nsysgen against Hydra, side by side, on the same config tree. Prints a Markdown report.

    python bench/run_benchmarks.py [--repeat N] [--hydra-sample N]

1. Sweep: `nsysgen -m` over 1000 points (100 delays x 10 durations), written to a fresh folder,
   against Hydra's own multirun (basic launcher, a no-op @hydra.main task) over a sample of the
   same points; compared per point.
2. One compile: `nsysgen` (default config) against one run of the no-op Hydra app.
3. `nsysgen check` over generated/, against compiling those experiments one process at a time.

Every number is the median of --repeat runs, with min-max, wall time of whole processes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOOP_APP = REPO / "bench" / "noop_hydra_app.py"
EXPERIMENTS = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))
SWEEP = ["capture.delay=range(0,100)", "capture.duration=range(10,20)"]  # 1000 points


def timed(run: Callable[[], None], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def call(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def nsysgen(*args: str, cwd: Path) -> None:
    call(sys.executable, "-m", "nsysgen", *args, cwd=cwd)


def summary(times: list[float], per: int = 1) -> str:
    med, low, high = (statistics.median(times) / per, min(times) / per, max(times) / per)
    return f"{med * 1000:.1f} ms (min {low * 1000:.1f}, max {high * 1000:.1f})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hydra-sample", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nsysgen-bench-"))
    rows = []
    try:
        # 1. Sweeps. Every run writes a fresh folder: deleting 7000 files between runs makes the
        # next run pay for the kernel's discards (seen: 2.3 s became 5-7 s).
        runs = iter(range(1000))

        def sweep() -> None:
            nsysgen("-m", *SWEEP, f"output_dir={work / f'sweep{next(runs)}'}", cwd=work)

        sweep_times = timed(sweep, args.repeat)
        points = len(list((work / "sweep0").glob("*/*/nsysgen-manifest.json")))
        assert points == 1000, points
        sample = args.hydra_sample

        def hydra_sweep() -> None:
            call(
                sys.executable,
                str(NOOP_APP),
                "-m",
                f"capture.delay=range(0,{sample})",
                "capture.duration=10",
                f"hydra.sweep.dir={work / f'hydra{next(runs)}'}",
                cwd=work,
            )

        hydra_times = timed(hydra_sweep, args.repeat)
        nsys_point = statistics.median(sweep_times) / 1000
        hydra_point = statistics.median(hydra_times) / sample
        rows.append(("1000-point sweep, total (nsysgen -m)", summary(sweep_times), "goal < 5 s"))
        rows.append(
            ("per point, nsysgen -m (compile + write 6 files)", summary(sweep_times, 1000), "")
        )
        rows.append(
            (
                f"per point, Hydra multirun no-op ({sample}-point sample)",
                summary(hydra_times, sample),
                "",
            )
        )
        rows.append(
            ("ratio Hydra / nsysgen per point", f"{hydra_point / nsys_point:.0f}x", "goal >= 50x")
        )

        # 2. One compile against a no-op Hydra app.
        single = timed(
            lambda: nsysgen(f"output_dir={work / 'single'}", cwd=work), max(args.repeat, 5) * 2
        )
        noop = timed(
            lambda: call(sys.executable, str(NOOP_APP), f"hydra.run.dir={work / 'run'}", cwd=work),
            max(args.repeat, 5) * 2,
        )
        rows.append(("one compile (nsysgen, default config)", summary(single), ""))
        rows.append(("one no-op @hydra.main run, same tree", summary(noop), ""))
        rows.append(
            (
                "ratio nsysgen / Hydra no-op",
                f"{statistics.median(single) / statistics.median(noop):.2f}",
                "goal <= 1.15",
            )
        )

        # 3. check over generated/ against compiling each experiment in its own process.
        check = timed(
            lambda: nsysgen("check", f"output_dir={REPO / 'generated'}", cwd=REPO), args.repeat
        )

        def one_by_one() -> None:
            for experiment in EXPERIMENTS:
                nsysgen(f"experiment={experiment}", f"output_dir={work / 'each'}", cwd=work)

        each = timed(one_by_one, args.repeat)
        rows.append((f"nsysgen check, generated/ ({len(EXPERIMENTS)} folders)", summary(check), ""))
        rows.append(("compiling them one process at a time", summary(each), ""))
        rows.append(
            (
                "ratio one-by-one / check",
                f"{statistics.median(each) / statistics.median(check):.1f}x",
                "goal > 1",
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeat={args.repeat}\n")
    print("| measurement | median (min, max) | goal |\n|---|---|---|")
    for name, value, goal in rows:
        print(f"| {name} | {value} | {goal} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
