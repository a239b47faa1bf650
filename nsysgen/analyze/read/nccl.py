"""`nsysgen analyze`: NCCL collectives from nsys reports, duration per message size.

Replaces the guide's hand work (copying two Events View tables into a CSV): every NCCL call is
read from the SQLite export, joined to the GPU kernel it launched (through the CUDA launch's
correlation id), and given its message size. The size comes from NCCL's own NVTX payload
("Message size [bytes]"), which nsys exports only with `--include-blobs true` (2025.x; checked
on nsys 2025.3.1 with NCCL from PyTorch 2.11); without it, from an enclosing NVTX range whose
name ends in the byte count (e.g. "allreduce 1048576").
"""

from __future__ import annotations

import csv
import re
import sqlite3
import statistics
import struct
from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from nsysgen.analyze.read.safe import cell
from nsysgen.analyze.read.steps import COMM_NAME, STEP_NAME

# A message size written at the end of a range named for a collective ("allreduce 1048576"),
# the way hand-annotated benchmarks name them. Other names ending in a number ("step 17",
# "layer 12") say nothing about a size.
_SIZE_AT_END = re.compile(r"(\d+)\s*$")
# Names of communication a hand-written range may carry a size in: the collectives, and the
# reduce, send/recv and point-to-point calls.
_SIZED_NAME = re.compile(rf"{COMM_NAME.pattern}|(?i:\b(reduce|send|recv|sendrecv|p2p)\b)")


@dataclass(frozen=True)
class NcclCall:
    report: str
    op: str  # the NCCL API, e.g. ncclAllReduce
    size_bytes: int | None
    kernel: str
    start_ns: int
    duration_ns: int


def calls_in(db: sqlite3.Connection, tables: set[str], report: str) -> list[NcclCall]:
    """Every NCCL kernel of an open export (`tables`: the tables it has), with its collective
    and message size from the NVTX ranges around its launch."""
    needed = {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL"}
    if not needed <= tables:
        return []
    ranges = db.execute(
        "SELECT e.start, e.end, e.globalTid, COALESCE(e.text, s.value), e.domainId, "
        "e.binaryData FROM NVTX_EVENTS e LEFT JOIN StringIds s ON e.textId = s.id "
        "WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL"
    ).fetchall()
    size_offsets = _message_size_offsets(db, tables)
    domains = {
        row[0]: row[1]
        for row in db.execute(
            "SELECT e.domainId, COALESCE(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN "
            "StringIds s ON e.textId = s.id WHERE e.eventType = 75"
        )
    }
    launches = db.execute(
        "SELECT r.start, r.globalTid, k.start, k.end, s.value "
        "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
        "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) "
        "JOIN StringIds s ON k.shortName = s.id WHERE s.value LIKE 'nccl%'"
    ).fetchall()
    nccl_domains = {d for d, name in domains.items() if name == "NCCL"}
    by_thread: dict[int, list[tuple[int, int, str, bool, int | None]]] = defaultdict(list)
    for start, end, tid, name, domain, blob in ranges:
        payload_size = _payload_size(blob, size_offsets)
        by_thread[tid].append((start, end, name or "", domain in nccl_domains, payload_size))
    for spans in by_thread.values():
        spans.sort(key=itemgetter(0, 1, 2, 3))
    # One sweep per thread over launches and ranges, both in time order: the ranges that hold
    # a launch are those started before it and not yet ended (few: NVTX ranges nest), so the
    # cost is linear in ranges + launches, not their product.
    launches.sort(key=itemgetter(1, 0))
    calls = []
    for tid, group in groupby(launches, key=itemgetter(1)):
        spans, next_span, active = by_thread.get(tid, []), 0, []
        for api_start, _, k_start, k_end, kernel in group:
            while next_span < len(spans) and spans[next_span][0] <= api_start:
                active.append(spans[next_span])
                next_span += 1
            active = [s for s in active if s[1] >= api_start]
            calls.append(_call(report, active, k_start, k_end, kernel))
    # Exports keep no row order (nsys 2025.6 says so): every field breaks ties.
    return sorted(calls, key=_call_order)


def _call_order(call: NcclCall) -> tuple[int, int, str, str, int]:
    size = -1 if call.size_bytes is None else call.size_bytes
    return call.start_ns, call.duration_ns, call.kernel, call.op, size


def _call(
    report: str,
    enclosing: list[tuple[int, int, str, bool, int | None]],
    k_start: int,
    k_end: int,
    kernel: str,
) -> NcclCall:
    """One NCCL kernel's call: the innermost NCCL range around its launch names the collective
    and carries its payload; else a size at the end of an enclosing range's name."""
    nccl = next((s for s in reversed(enclosing) if s[3]), None)
    op = nccl[2] if nccl else ""
    sized = [
        _SIZE_AT_END.search(s[2])
        for s in reversed(enclosing)
        if not s[3] and _SIZED_NAME.search(s[2]) and not STEP_NAME.match(s[2])
    ]
    size = (
        nccl[4]
        if nccl and nccl[4] is not None
        else next((int(m.group(1)) for m in sized if m), None)
    )
    return NcclCall(report, op or kernel, size, kernel, k_start, k_end - k_start)


def _message_size_offsets(db: sqlite3.Connection, tables: set[str]) -> dict[int, int]:
    """schema id -> offset of the 'Message size' field in NCCL's NVTX payload schemas."""
    if "NVTX_PAYLOAD_SCHEMA_ENTRIES" not in tables:
        return {}
    return {
        schema: offset or 0
        for schema, name, offset in db.execute(
            "SELECT schemaId, name, offset FROM NVTX_PAYLOAD_SCHEMA_ENTRIES"
        )
        if name and name.startswith("Message size")
    }


def _payload_size(blob: bytes | str | None, offsets: dict[int, int]) -> int | None:
    """The message size in an exported NVTX payload blob.

    Layout seen in nsys 2025.3.1 exports: four little-endian u64 (payload count, schema id,
    payload size, offset of the payload data), then the payload itself.
    """
    if not blob or not offsets or isinstance(blob, str):
        return None
    data = bytes(blob)
    if len(data) < 32:
        return None
    _count, schema, size, start = struct.unpack_from("<QQQQ", data, 0)
    field = offsets.get(schema)
    if field is None or start + field + 8 > len(data) or field + 8 > size:
        return None
    return int(struct.unpack_from("<Q", data, start + field)[0])


def human_size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:g} {unit}" if size == int(size) else f"{size:.1f} {unit}"
        size //= 1024
    raise AssertionError


@dataclass(frozen=True)
class SizeSummary:
    op: str
    size_bytes: int | None
    calls: int
    mean_us: float
    median_us: float
    p90_us: float
    min_us: float
    max_us: float


def summarise(calls: list[NcclCall]) -> list[SizeSummary]:
    groups: dict[tuple[str, int | None], list[float]] = defaultdict(list)
    for call in calls:
        groups[(call.op, call.size_bytes)].append(call.duration_ns / 1000)
    rows = []
    for (op, size), values in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or -1)):
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        rows.append(
            SizeSummary(
                op,
                size,
                len(values),
                statistics.fmean(values),
                statistics.median(values),
                p90,
                ordered[0],
                ordered[-1],
            )
        )
    return rows


def write_csvs(calls: list[NcclCall], summary: list[SizeSummary], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    calls_file, summary_file = out / "nccl_calls.csv", out / "nccl_by_size.csv"
    with calls_file.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["report", "op", "size_bytes", "kernel", "start_ns", "duration_us"])
        for c in calls:
            writer.writerow(
                [
                    cell(c.report),
                    cell(c.op),
                    "" if c.size_bytes is None else c.size_bytes,
                    cell(c.kernel),
                    c.start_ns,
                    f"{c.duration_ns / 1000:.3f}",
                ]
            )
    with summary_file.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            [
                "op",
                "size_bytes",
                "size",
                "calls",
                "mean_us",
                "median_us",
                "p90_us",
                "min_us",
                "max_us",
            ]
        )
        for s in summary:
            size = "" if s.size_bytes is None else s.size_bytes
            label = "unknown" if s.size_bytes is None else human_size(s.size_bytes)
            writer.writerow(
                [
                    cell(s.op),
                    size,
                    label,
                    s.calls,
                    f"{s.mean_us:.3f}",
                    f"{s.median_us:.3f}",
                    f"{s.p90_us:.3f}",
                    f"{s.min_us:.3f}",
                    f"{s.max_us:.3f}",
                ]
            )
    return [calls_file, summary_file]
