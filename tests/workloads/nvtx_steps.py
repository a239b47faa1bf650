"""A small CPU "training" program for the real Slurm + nsys tests.

Each step is an NVTX range named "step N" (PyPI nvtx 0.2.11: newer releases emit nothing under
nsys 2023.4.4, see tests/README.md). Optionally one NVTX range named "profile" spans a window of
steps, for capture by NVTX range. Every rank writes a JSON marker saying where it ran and whether
nsys launched it, so tests can check that unselected ranks ran without nsys.

--barrier-dir makes the ranks synchronous, as data-parallel training is: every step ends in a
file barrier on the shared filesystem inside an NVTX range "barrier"; --sleep-rank/--sleep-steps
/--sleep-ms make one rank late on chosen steps (issue 17's CPU straggler proof).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import nvtx

BARRIER_TIMEOUT_S = 60


def barrier(folder: Path, step: int, rank: int, world: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    Path(folder, f"{step}.{rank}").touch()
    # Polled every 2 ms: finer polling by 16 ranks on 2 cores costs more CPU time than the
    # jitter it saves (2 ms is far below the straggler bar of 25 % of a 50 ms step).
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while len(arrived := list(folder.glob(f"{step}.*"))) < world:
        if time.monotonic() > deadline:
            # A rank that never came (its nsys failed to start) must fail the job, not hang it
            # until the time limit.
            ranks = sorted(int(p.suffix[1:]) for p in arrived)
            raise SystemExit(f"rank {rank}: step {step} barrier timed out; arrived: {ranks}")
        time.sleep(0.002)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--step-seconds", type=float, default=0.05)
    parser.add_argument("--profile-steps", default="", help="FIRST:LAST, both included")
    parser.add_argument("--marker-dir", required=True)
    parser.add_argument("--fail-rank", type=int, default=-1)
    parser.add_argument("--barrier-dir", default="")
    parser.add_argument("--sleep-rank", type=int, default=-1)
    parser.add_argument("--sleep-steps", default="")
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--idle", action="store_true", help="sleep through steps, no busy loop")
    args = parser.parse_args()
    late_steps = {int(s) for s in args.sleep_steps.split(",") if s}
    world = int(os.environ.get("SLURM_NTASKS", "1"))

    rank = int(os.environ["SLURM_PROCID"])
    first, last = (
        (int(x) for x in args.profile_steps.split(":")) if args.profile_steps else (-1, -1)
    )
    for step in range(args.steps):
        if step == first:
            nvtx.push_range("profile")
        with nvtx.annotate(f"step {step}"):
            busy_until = time.monotonic() + args.step_seconds
            if args.idle:
                time.sleep(args.step_seconds)
            while time.monotonic() < busy_until:
                pass
            time.sleep(0.002)  # a traced OS runtime call (nanosleep) in every step
            if rank == args.sleep_rank and step in late_steps:
                time.sleep(args.sleep_ms / 1000)
            if args.barrier_dir:
                with nvtx.annotate("barrier"):
                    barrier(Path(args.barrier_dir), step, rank, world)
        if step == last:
            nvtx.pop_range()
    parent = Path(f"/proc/{os.getppid()}/comm").read_text().strip()
    marker = {
        "rank": rank,
        "node": os.environ.get("SLURMD_NODENAME"),
        "parent": parent,
        "under_nsys": "libToolsInjection" in os.environ.get("LD_PRELOAD", ""),
        "steps_done": args.steps,
    }
    Path(args.marker_dir, f"rank{rank}.json").write_text(json.dumps(marker))
    return 1 if rank == args.fail_rank else 0


if __name__ == "__main__":
    raise SystemExit(main())
