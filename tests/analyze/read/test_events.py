"""A report's stream waits (nsysgen/analyze/read/events.py), and the readiness they give an NCCL
kernel through the whole reader (read_export): the kernel waited for the work its stream's
waited-on event covered, not for a copy on another stream launched before it (issue 46 item 1).

Real data: an nsys 2025.3.1 export (tests/data/gpu/steps47) whose stream waits name no traced
record, as that version writes them: read as lost, and said."""

from __future__ import annotations

import lzma
import sqlite3
from pathlib import Path

from nsysgen.analyze.judge.summary import limits_of_readiness
from nsysgen.analyze.read import events
from nsysgen.analyze.read.landmarks import BY_LAUNCH_ORDER
from nsysgen.analyze.read.report import read_export
from tests.analyze.export_tables import TABLES
from tests.conftest import REPO

PID = 7 << 24  # globalPid: the OS pid above nsys's 24 low bits
REAL = REPO / "tests" / "data" / "gpu" / "steps47" / "hf-resume-new.sqlite.xz"
EVENT_TABLES = (
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER,"
    " deviceId INTEGER, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,"
    " correlationId INTEGER, globalPid INTEGER, deprecatedSyncType INTEGER, syncType INTEGER,"
    " eventId INTEGER, eventSyncId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId INTEGER, contextId INTEGER,"
    " greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,"
    " eventId INTEGER, eventSyncId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,"
    " streamId INTEGER, correlationId INTEGER, globalPid INTEGER);"
)


def export(path: Path, linked: bool) -> Path:
    """One rank, two steps of DDP's shape with a prefetch: backward on stream 7 (ends 100 ms
    into the step), the next batch's copy on stream 20 (launched before the all-reduce, ends at
    400 ms), and the all-reduce on stream 13 held to 410 ms by the step's first collective
    (a peer's wait) after a wait on the event stream 7 recorded after the backward."""
    db = sqlite3.connect(path)
    db.executescript(TABLES + EVENT_TABLES)
    db.execute("INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'ncclDevKernel_AllReduce')")
    runtime, kernels, copies, waits, records = [], [], [], [], []
    ms = 1_000_000
    for step in (1, 2, 3):
        t0, c = step * 1000 * ms, step * 100
        db.execute(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0, NULL)",
            (t0, t0 + 999 * ms, f"step {step}", PID + 1),
        )
        calls = {  # correlation id -> host time of the call
            c + 1: t0, c + 2: t0 + 10 * ms, c + 3: t0 + 30 * ms, c + 5: t0 + 45 * ms,
            c + 4: t0 + 48 * ms, c + 6: t0 + 50 * ms,
        }  # fmt: skip
        runtime += [(at, at + ms // 10, PID + 1, cid, 0) for cid, at in calls.items()]
        kernels.append((t0 + 5 * ms, t0 + 100 * ms, 0, 7, c + 1, PID, 1))  # backward
        copies.append((t0 + 35 * ms, t0 + 400 * ms, 0, 20, c + 3, PID))  # the prefetch
        kernels.append((t0 + 46 * ms, t0 + 405 * ms, 0, 13, c + 5, PID, 2))  # waits for a peer
        kernels.append((t0 + 410 * ms, t0 + 450 * ms, 0, 13, c + 6, PID, 2))  # the all-reduce
        records.append((0, 1, None, 7, c + 2, PID, 42, step))  # cudaEventRecord on stream 7
        event, sync = (42, step) if linked else (events.NO_EVENT, events.NO_EVENT)
        waits.append((t0 + 48 * ms, t0 + 48 * ms, 0, 1, None, 13, c + 4, PID, None, 2, event, sync))
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)", runtime)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?)", kernels)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, ?, ?, ?)", copies)
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (?, ?, ?, ?, ?, ?, ?, ?)", records
    )
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        waits,
    )
    db.commit()
    db.close()
    return path


def tables(db: sqlite3.Connection) -> set[str]:
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_each_wait_is_linked_to_its_record(tmp_path: Path) -> None:
    db = sqlite3.connect(export(tmp_path / "r.sqlite", linked=True))
    found = events.read_waits(db, tables(db))
    ms = 1_000_000
    assert found.lost is None and list(found.by_pid) == [7]
    assert found.by_pid[7][0] == (1048 * ms, 13, 1010 * ms, 7)
    assert len(found.by_pid[7]) == 3


def test_waits_that_name_no_record_or_no_table_are_said_lost(tmp_path: Path) -> None:
    db = sqlite3.connect(export(tmp_path / "r.sqlite", linked=False))
    assert events.read_waits(db, tables(db)).lost == events.NO_LINKS
    assert events.read_waits(db, {"StringIds"}).lost == events.NO_TABLES
    db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    assert events.read_waits(db, tables(db)) == events.StreamWaits()  # no wait: nothing lost


def test_a_real_2025_export_names_no_record_for_its_waits(tmp_path: Path) -> None:
    path = tmp_path / "real.sqlite"
    path.write_bytes(lzma.decompress(REAL.read_bytes()))
    db = sqlite3.connect(path)
    assert events.read_waits(db, tables(db)).lost == events.NO_LINKS


def test_the_reader_uses_the_waits_and_says_when_it_cannot(tmp_path: Path) -> None:
    """Through read_export: with the waits, the all-reduce's rank was ready when its bucket was
    (100 ms into the step); without them, when the unrelated copy ended (400 ms)."""
    ms = 1_000_000
    linked = read_export(export(tmp_path / "linked_rank0.sqlite", linked=True)).tables[0]
    unlinked = read_export(export(tmp_path / "unlinked_rank0.sqlite", linked=False)).tables[0]
    assert linked.ready_lost is None and unlinked.ready_lost == events.NO_LINKS
    # Step 2 opens at step 1's gate (1,450 ms): its bucket is done at 2,100 ms (650 ms after
    # the gate), the copy at 2,400 ms (950 ms after it).
    ready = {c.step: c.ready_ns for c in linked.collectives if c.index == 1}
    late = {c.step: c.ready_ns for c in unlinked.collectives if c.index == 1}
    assert (ready[2], late[2]) == (650 * ms, 950 * ms)
    # The earlier collective's wait was issued before it: it served that one, not this one.
    assert [c.ready_ns for c in linked.collectives if (c.step, c.index) == (2, 0)] == [595 * ms]


def test_the_summary_says_where_readiness_came_from_launch_order(tmp_path: Path) -> None:
    linked = read_export(export(tmp_path / "a_rank0.sqlite", linked=True)).tables
    unlinked = read_export(export(tmp_path / "b_rank1.sqlite", linked=False)).tables
    assert limits_of_readiness(linked) == []
    assert limits_of_readiness(unlinked) == [f"{BY_LAUNCH_ORDER} ({events.NO_LINKS})"]
