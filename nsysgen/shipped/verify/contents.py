"""What a report holds, read from its SQLite export."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

NVTX_RANGE_TYPES = (59, 60, 70, 71)  # push/pop and start/end ranges, with and without payload
NVTX_MARK_TYPES = (34,)  # marks: the step helper marks every optimizer step with one
_NS = 1e9


@dataclass
class Contents:
    ranges: list[str]
    kernels: int
    osrt: int
    gpu_metrics: int
    duration_s: float | None
    efa_devices: int = 0  # EFA device ports the efa_metrics plugin sampled
    efa_samples: int = 0
    plugin_failures: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # nsys's diagnostics of dropped CUPTI events
    # (process, start, end, name) of every NVTX range, and (process, time, text) of every
    # optimizer-step mark of the step helper, for the one-optimizer-step-per-step check.
    spans: list[tuple[int, int, int, str]] = field(default_factory=list)
    marks: list[tuple[int, int, str]] = field(default_factory=list)
    # (process, time, text) of the helper's numbering marks: how each process numbered its steps.
    numbering: list[tuple[int, int, str]] = field(default_factory=list)


def _count(db: sqlite3.Connection, table: str, where: str = "") -> int:
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
    ).fetchone()
    if not exists:
        return 0
    row = db.execute(f"SELECT COUNT(*) FROM {table} {where}").fetchone()  # noqa: S608
    return int(row[0])


def read_contents(sqlite_file: Path) -> Contents:
    with sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True) as db:
        ranges: list[str] = []
        spans: list[tuple[int, int, int, str]] = []
        marks: list[tuple[int, int, str]] = []
        numbering: list[tuple[int, int, str]] = []
        if _count(db, "NVTX_EVENTS"):
            types = ",".join(map(str, NVTX_RANGE_TYPES + NVTX_MARK_TYPES))
            rows = db.execute(
                # globalTid: the pid in bits 24..47 (the bits above hold the VM id).
                "SELECT COALESCE(e.text, s.value), e.eventType, "
                "(COALESCE(e.globalTid, 0) >> 24) & 16777215, e.start, e.end "
                "FROM NVTX_EVENTS e LEFT JOIN StringIds s ON e.textId = s.id "
                f"WHERE e.eventType IN ({types}) ORDER BY e.start, e.end"  # noqa: S608
            ).fetchall()
            for text, kind, process, start, end in rows:
                if text is None:
                    continue
                if kind in NVTX_MARK_TYPES:
                    if str(text).startswith("nsysgen optimizer step "):
                        marks.append((int(process), int(start), str(text)))
                    elif str(text).startswith("nsysgen numbering "):
                        numbering.append((int(process), int(start), str(text)))
                    continue
                ranges.append(str(text))
                if end is not None:
                    spans.append((int(process), int(start), int(end), str(text)))
        duration = None
        if _count(db, "ANALYSIS_DETAILS"):
            row = db.execute("SELECT duration FROM ANALYSIS_DETAILS").fetchone()
            duration = None if row is None or row[0] is None else float(row[0]) / _NS
        devices, samples = _efa_rows(db)
        return Contents(
            ranges=ranges,
            kernels=_count(db, "CUPTI_ACTIVITY_KIND_KERNEL"),
            osrt=_count(db, "OSRT_API"),
            gpu_metrics=_count(db, "GPU_METRICS"),
            duration_s=duration,
            efa_devices=devices,
            efa_samples=samples,
            plugin_failures=_plugin_failures(db),
            dropped=_dropped_events(db),
            spans=spans,
            marks=marks,
            numbering=numbering,
        )


def _efa_rows(db: sqlite3.Connection) -> tuple[int, int]:
    """(EFA device ports, samples) of the efa_metrics plugin. nsys 2025.3 stores the plugin's
    samples as generic counter events: one NVTX scope "AWS EFAs/<device>:<port> [<freq>Hz]" per
    port, and one GENERIC_EVENTS row per sample of a port, whose type's fields are the counters
    ("rdma_read_bytes per second", ...). Other plugins' samples use the same tables, so samples
    count only for types with an EFA counter field."""
    if not _count(db, "NVTX_SCOPES"):
        return 0, 0
    devices = db.execute(
        "SELECT COUNT(*) FROM NVTX_SCOPES WHERE path LIKE 'AWS EFAs/%'"
    ).fetchone()[0]
    samples = 0
    if devices and _count(db, "GENERIC_EVENTS") and _count(db, "GENERIC_EVENT_TYPE_FIELDS"):
        samples = db.execute(
            "SELECT COUNT(*) FROM GENERIC_EVENTS WHERE typeId IN (SELECT f.typeId FROM "
            "GENERIC_EVENT_TYPE_FIELDS f JOIN StringIds s ON s.id = f.fieldNameId WHERE "
            f"{_EFA_FIELD})"
        ).fetchone()[0]
    return int(devices), int(samples)


# The EFA counters nic_sampler reports (hw_counters of the efa driver).
_EFA_FIELD = " OR ".join(
    f"s.value LIKE '{prefix}%'" for prefix in ("rdma_", "tx_", "rx_", "send_", "recv_")
)


def _diagnostics(db: sqlite3.Connection, where: str) -> list[str]:
    """The texts of nsys's own diagnostics (DIAGNOSTIC_EVENT) that match `where`, in order."""
    if not _count(db, "DIAGNOSTIC_EVENT"):
        return []
    rows = db.execute(
        f"SELECT text FROM DIAGNOSTIC_EVENT WHERE {where} ORDER BY timestamp, text"  # noqa: S608
    ).fetchall()
    return [str(r[0]) for r in rows]


def _plugin_failures(db: sqlite3.Connection) -> list[str]:
    """nsys's own diagnostics about plugins that failed (e.g. "Plugin exited with code 1." when
    nic_sampler finds no EFA device under its sysfs root); a stop by signal is the normal end."""
    return _diagnostics(
        db,
        "text LIKE 'Plugin exited with code %' AND text NOT LIKE 'Plugin exited with code 0%'",
    )


def _dropped_events(db: sqlite3.Connection) -> list[str]:
    """nsys's diagnostics that it dropped CUPTI events (e.g. "8400 incomplete CUPTI events
    dropped"), the first few: what a report without kernels under the CUDA hardware trace
    says about itself."""
    return _diagnostics(db, "text LIKE '%CUPTI%' AND text LIKE '%drop%'")[:3]
