"""summary.json content of a job of many ranks with a planted straggler and a planted slow
message size, shaped as `nsysgen analyze` writes it (nsysgen/analyze/judge/summary.py), for the
report's views at a scale no test machine records: 1,024 ranks x 20 steps.

Rank `late` arrives last at the collectives of most judged steps by `late_ms`: the others wait
that long (their wait_ms), it waits for nobody. The 64 KiB all-reduce runs at a tenth of the
fabric's expected bus bandwidth and is flagged.
"""

from __future__ import annotations

import random
from typing import Any

FIRST, STEPS = 10, 20
PER_NODE = 8


def _step(step: int, rng: random.Random, late: float, wait: float, edge: str | None) -> Any:
    compute, comm, other = 60 + rng.random() * 2, 8 + rng.random(), 1.5
    idle = 4 + rng.random()
    return {
        "step": step,
        "source": "gpu",
        "cpu_ms": round(compute + comm + wait + other + idle + 0.5, 4),
        "step_ms": round(compute + comm + wait + other + idle, 4),
        "compute_ms": round(compute, 4),
        "nccl_ms": round(comm + wait, 4),
        "compute_busy_ms": round(compute, 4),
        "exposed_comm_ms": round(comm + wait, 4),
        "other_ms": other,
        "idle_ms": round(idle, 4),
        "kernels": 400,
        "wait_ms": round(wait, 4),
        "late_ms": round(late, 4),
        "window_edge": edge,
        # The split of issue 39 (nsysgen/analyze/judge/waiting.py): the parts add up to step_ms.
        "comm_wait_ms": round(wait, 4),
        "comm_transfer_ms": round(comm, 4),
        "host_gap_ms": 0.0,
    }


def summary(ranks: int = 1024, late: int = 700, late_ms: float = 30.0, seed: int = 0) -> Any:
    rng = random.Random(seed)
    steps = list(range(FIRST, FIRST + STEPS))
    late_steps = [s for s in steps[1:-1] if s % 5 != 0]  # late on most judged steps
    entries: list[Any] = []
    for rank in range(ranks):
        rows = []
        for step in steps:
            edge = "open" if step == steps[0] else "close" if step == steps[-1] else None
            planted = step in late_steps
            own_late = late_ms if planted and rank == late else rng.random() * 0.2
            wait = 0.0 if rank == late else (late_ms if planted else 0) + rng.random() * 0.2
            rows.append(_step(step, rng, own_late, wait, edge))
        entries.append(
            {
                "rank": rank,
                "report": f"big_job9_rank{rank}",
                "pid": 1000 + rank,
                "device": rank % PER_NODE,
                "host": f"node-{rank // PER_NODE:03d}",
                "medians_without_window_edges": {},
                "totals": {
                    "kernel_ms": 0.0,
                    "kernels": 0,
                    "nccl_kernel_ms": 0.0,
                    "nccl_kernels": 0,
                    "steps": STEPS,
                },  # fmt: skip
                "steps": rows,
            }
        )
    sizes = []
    for power in range(12, 29, 2):  # 4 KiB .. 256 MiB
        size = 1 << power
        expected = 360.0 * size / (size + (1 << 20))  # a latency-bound curve up to ~360 GB/s
        bus = expected * (0.1 if size == 64 << 10 else 0.85)
        sizes.append(
            {
                "op": "ncclAllReduce",
                "size_bytes": size,
                "size": _human(size),
                "calls": 2 * ranks,
                "median_us": round(size / (bus * 1e3) * 2, 3),
                "algbw_GBps": round(bus / 2, 3),
                "busbw_GBps": round(bus, 3),
                "expected_busbw_GBps": round(expected, 3),
                "flag": "far below the fabric" if size == 64 << 10 else None,
            }
        )
    return {
        "schema": "nsysgen-analyze-summary/1",
        "label": f"job big, run 9, {ranks} report(s)",
        "reports": [e["report"] for e in entries],
        "world_size": ranks,
        "first_step_ignored": steps[0],
        "last_step_ignored": steps[-1],
        "window_edges": {
            "open": steps[0],
            "close": steps[-1],
            "in_stragglers": False,
            "in_medians": False,
        },  # fmt: skip
        "thresholds": {
            "late_min_ms": 1.0,
            "late_min_fraction_of_step": 0.25,
            "slow_rank_min_fraction_of_steps": 0.5,
        },  # fmt: skip
        "collectives_matched": 2 * STEPS * ranks,
        "collectives_matched_by": ["operationId"],
        "steps_with_unequal_collective_counts": [],
        "ranks": entries,
        "stragglers": [
            {
                "rank": late,
                "steps": late_steps,
                "mean_lateness_ms": late_ms,
                "kind": "slow rank",
                "late_on_fraction_of_steps": round(len(late_steps) / (STEPS - 2), 3),
                "evidence": ["collectives"],
            }
        ],
        "by_step": [
            {
                "step": step,
                "judged": step not in (steps[0], steps[-1]),
                "job_step_ms": round(max(e["steps"][i]["step_ms"] for e in entries), 4),
                "late_rank": late if step in late_steps else None,
                "late_ms": late_ms if step in late_steps else 0.0,
                "late_ranks": [late] if step in late_steps else [],
                "late_count": 1 if step in late_steps else 0,
                "what_if_step_ms": (
                    round(max(e["steps"][i]["step_ms"] for e in entries) - late_ms, 4)
                    if step in late_steps
                    else None
                ),
                "waited": [r for r in range(9) if r != late][:8] if step in late_steps else [],
                "waited_count": ranks - 1 if step in late_steps else 0,
                "evidence": "collectives",
            }
            for i, step in enumerate(steps)
        ],
        "nccl_by_size": sizes,
        "limits": [],
    }


def _human(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size >> shift} {unit}"
    return f"{size} B"
