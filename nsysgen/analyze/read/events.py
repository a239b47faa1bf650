"""Which stream waited for which: a report's CUDA stream waits on events
(`cudaStreamWaitEvent`), so that a rank's readiness for an NCCL kernel is what its stream really
waited for, not every piece of work launched before it (nsysgen/analyze/read/landmarks.py).

nsys exports each wait as a CUPTI_ACTIVITY_KIND_SYNCHRONIZATION row of type STREAM_WAIT_EVENT
(the waiting stream, the call's correlation id, and the event with the record it waits for:
eventId and eventSyncId), and, with CUDA event tracing (nsys 2024.x+: `--cuda-event-trace`),
each `cudaEventRecord` as a CUPTI_ACTIVITY_KIND_CUDA_EVENT row (its stream and correlation id).
A wait whose event names no record (id 0xFFFFFFFF, as nsys 2025.3.1 writes for events it did not
trace) cannot be followed. Times are the host's: when each call was made, from the CUDA runtime
table; the GPU work a record covers is the work launched on its stream before it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
EVENTS = "CUPTI_ACTIVITY_KIND_CUDA_EVENT"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
STREAM_WAIT_EVENT = 2  # ENUM_CUPTI_SYNC_TYPE
NO_EVENT = 0xFFFFFFFF

# (when the wait was issued, the waiting stream, when the record was issued, its stream)
Wait = tuple[int, int, int, int]


@dataclass(frozen=True)
class StreamWaits:
    """Every process's stream waits, or why the report's cannot be followed."""

    by_pid: dict[int, list[Wait]] = field(default_factory=dict)
    lost: str | None = None  # None: the waits were read


NO_TABLES = (
    "the report has no CUDA event table (record with nsys --cuda-event-trace=true, 2024.x and "
    "later)"
)
NO_LINKS = "the report's stream waits name no traced event record"


def read_waits(db: sqlite3.Connection, tables: set[str]) -> StreamWaits:
    """The stream waits of every process, each linked to the record it waited for, in the
    order they were issued."""
    if not {SYNC, EVENTS, RUNTIME} <= tables:
        return StreamWaits(lost=NO_TABLES)
    rows = db.execute(
        "SELECT s.globalPid >> 24, rw.start, s.streamId, rr.start, e.streamId "
        f"FROM {SYNC} s "
        f"JOIN {EVENTS} e ON e.eventId = s.eventId AND e.eventSyncId = s.eventSyncId "
        "AND (e.globalPid >> 24) = (s.globalPid >> 24) "
        f"JOIN {RUNTIME} rw ON rw.correlationId = s.correlationId "
        "AND (rw.globalTid >> 24) = (s.globalPid >> 24) "
        f"JOIN {RUNTIME} rr ON rr.correlationId = e.correlationId "
        "AND (rr.globalTid >> 24) = (e.globalPid >> 24) "
        f"WHERE s.syncType = {STREAM_WAIT_EVENT} AND s.eventId != {NO_EVENT}"
    ).fetchall()
    if not rows:
        waits = db.execute(f"SELECT COUNT(*) FROM {SYNC} WHERE syncType = {STREAM_WAIT_EVENT}")
        (count,) = waits.fetchone()
        # No wait at all: every stream ran in its own order, which is what the reader assumes.
        return StreamWaits(lost=NO_LINKS) if count else StreamWaits()
    by_pid: dict[int, list[Wait]] = {}
    for pid, issued, stream, recorded, source in rows:
        by_pid.setdefault(pid, []).append((issued, stream, recorded, source))
    for waits_of in by_pid.values():
        waits_of.sort()
    return StreamWaits(by_pid)
