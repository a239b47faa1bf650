"""NCCL bandwidth per (operation, message size) from each call's transfer time (summary.json's
nccl_by_size, nccl_bandwidth.csv).

A rank that reaches a collective before the last rank spends the head of its NCCL kernel
waiting: every rank's kernel ends once the last one has arrived. nsysgen/analyze/judge/stragglers.py
matches the collectives across ranks and measures that wait per call (own duration - the
shortest, so within [0, duration]). Bandwidth from the whole kernel time spreads a late rank's
delay over the message: at 64 ranks with one rank late on 5 of 8 steps, the 16 MiB all-reduce's
median kernel took 15.3 ms (2.15 GB/s of bus bandwidth against the 100 GB/s planted, the
waiting ranks outnumbering the late one) and a planted slow 1 MiB size lost its flag. So each
call's transfer time is its kernel time less its wait; a call not matched across ranks (one
rank recorded, a call outside the step ranges, past the collectives all ranks share in a step)
keeps its kernel time, and the limits say how many.

Per row: median_us (kernel time, waiting included: what nsys shows), algbw_GBps and busbw_GBps
from it, as before the transfer figures; transfer_median_us (the median call's kernel time less
its wait), transfer_algbw_GBps and transfer_busbw_GBps from it, the figures held against the
fabric (fabric.py: expected_busbw_GBps, fraction_of_expected, flag) and shown by the report and
pictures; calls_not_corrected, the row's calls whose wait was not measured.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping
from typing import Literal, TypedDict

from nsysgen.analyze.judge import fabric as yardstick
from nsysgen.analyze.read.nccl import NcclCall, human_size
from nsysgen.links import bus_factor

# nccl_bandwidth.csv's columns, summary.json's nccl_by_size keys in this order.
SizeColumn = Literal[
    "op", "size_bytes", "size", "calls", "median_us", "algbw_GBps", "busbw_GBps",
    "transfer_median_us", "transfer_algbw_GBps", "transfer_busbw_GBps", "calls_not_corrected",
    "expected_busbw_GBps", "fraction_of_expected", "flag",
]  # fmt: skip
# A matched call's wait for the last peer (ns), by (report, kernel start ns, duration ns).
Waits = Mapping[tuple[str, int, int], int]


class SizeEntry(TypedDict):
    op: str
    size_bytes: int
    size: str
    calls: int
    median_us: float  # the median call's whole kernel time, waiting included
    algbw_GBps: float
    busbw_GBps: float | None  # None: it cannot be computed (one rank known; see "limits")
    transfer_median_us: float  # the median of each call's kernel time less its wait
    transfer_algbw_GBps: float | None  # None: no transfer time left to divide by
    transfer_busbw_GBps: float | None
    calls_not_corrected: int  # calls not matched across ranks: their wait is not known
    expected_busbw_GBps: float | None  # what the fabric should give; None: no fabric known
    fraction_of_expected: float | None  # transfer_busbw_GBps / expected_busbw_GBps
    flag: str | None  # why the size is flagged (on its transfer figures); None: it is not


def transfer_ns(call: NcclCall, waits: Waits) -> int | None:
    """The call's kernel time less its wait for the last peer; None: not matched."""
    wait = waits.get((call.report, call.start_ns, call.duration_ns))
    if wait is None:
        return None
    return call.duration_ns - min(max(wait, 0), call.duration_ns)


def _bandwidth(size: int, ns: float, factor: float | None) -> tuple[float | None, float | None]:
    """(algorithm, bus) bandwidth in GB/s of `size` bytes in `ns` (bytes per ns = GB/s)."""
    if ns <= 0:
        return None, None
    algbw = size / ns
    return round(algbw, 3), None if factor is None else round(algbw * factor, 3)


def nccl_by_size(
    calls: list[NcclCall],
    world: int,
    fabric: yardstick.Fabric | None = None,
    waits: Waits | None = None,
) -> list[SizeEntry]:
    """One row per (operation, size) of the sized calls; `waits`: stragglers.Lateness's
    call_wait_ns (None: no call matched, every figure from the kernel time)."""
    waits = waits or {}
    groups: dict[tuple[str, int], list[tuple[int, int | None]]] = defaultdict(list)
    for call in calls:
        if call.size_bytes:
            groups[(call.op, call.size_bytes)].append((call.duration_ns, transfer_ns(call, waits)))
    rows: list[SizeEntry] = []
    for (op, size), found in sorted(groups.items()):
        factor = bus_factor(op, world) if world > 1 else None
        median_ns = statistics.median(d for d, _ in found)
        moved_ns = statistics.median(d if t is None else t for d, t in found)
        algbw, busbw = _bandwidth(size, median_ns, factor)
        moved_alg, moved_bus = _bandwidth(size, moved_ns, factor)
        assert algbw is not None  # a kernel takes time
        rows.append(
            {
                "op": op,
                "size_bytes": size,
                "size": human_size(size),
                "calls": len(found),
                "median_us": round(median_ns / 1000, 3),
                "algbw_GBps": algbw,
                "busbw_GBps": busbw,
                "transfer_median_us": round(moved_ns / 1000, 3),
                "transfer_algbw_GBps": moved_alg,
                "transfer_busbw_GBps": moved_bus,
                "calls_not_corrected": sum(1 for _, t in found if t is None),
                "expected_busbw_GBps": None,
                "fraction_of_expected": None,
                "flag": None,
            }
        )
    # The fabric and the sizes' order judge the transfer, not the wait for a late peer.
    judged = yardstick.judge(
        [
            {
                "op": r["op"],
                "size_bytes": r["size_bytes"],
                "size": r["size"],
                "median_us": r["transfer_median_us"],
                "busbw_GBps": r["transfer_busbw_GBps"],
            }
            for r in rows
        ],
        fabric,
        world,
    )
    for row, verdict in zip(rows, judged, strict=True):
        row["expected_busbw_GBps"] = verdict["expected_busbw_GBps"]
        row["fraction_of_expected"] = verdict["fraction_of_expected"]
        row["flag"] = verdict["flag"]
    return rows


def not_corrected(rows: list[SizeEntry]) -> str | None:
    """The limit that says how many sized calls kept their wait in their bandwidth; None: none."""
    missed = sum(r["calls_not_corrected"] for r in rows)
    if not missed:
        return None
    total = sum(r["calls"] for r in rows)
    return (
        f"bandwidth of {missed} of {total} sized NCCL call(s) from their whole kernel time: not "
        "matched across ranks (one rank recorded, outside the step ranges, or past the "
        "collectives every rank issued in the step), so a wait for a late peer stays in "
        "their transfer_median_us and transfer_busbw_GBps"
    )
