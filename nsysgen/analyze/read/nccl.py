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
import shlex
import sqlite3
import statistics
import struct
from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.safe import cell
from nsysgen.analyze.read.steps import COMM_NAME, STEP_NAME
from nsysgen.reports.export import NoNsys, export_path, is_current, make_export
from nsysgen.reports.export import find_nsys as nsys_to_use

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


def export_sqlite(report: Path, nsys: str, force: bool = False) -> Path:
    """The report's SQLite export, made with nsys unless an up-to-date one exists (or `force`):
    nsysgen/reports/export.py's, the one the shipped verifier makes too (the same switches,
    and renamed into place once whole)."""
    target = export_path(report)
    if not force and is_current(report, target):
        return target
    made, said = make_export(nsys, report)
    if made is None:
        raise AnalyzeError(f"nsys export failed for {report}: {said}")
    return made


def find_nsys(explicit: str | None) -> str:
    try:
        found = nsys_to_use(explicit)
    except NoNsys as error:
        found, why = None, f"{error}; "
    else:
        why = ""
    if not found:
        raise AnalyzeError(
            f"no nsys to export .nsys-rep reports with ({why}allowed: --nsys PATH, the "
            "NSYS variable, nsys on PATH, or .sqlite exports)"
        )
    return found


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


# A line of `srun --label` output starts with its task id: "0: ".
_TASK_LABEL = re.compile(r"^\s*\d+:\s")


def parse_nccl_tests_log(path: Path) -> dict[int, tuple[float, float | None]]:
    """size (bytes) -> (out-of-place time in us, bus bandwidth in GB/s), from the result table
    nccl-tests prints (size count type redop root time algbw busbw #wrong ...), also in a job
    log whose lines carry srun's task labels."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise AnalyzeError(f"--nccl-tests-log {path}: {exc.strerror or exc}") from None
    rows: dict[int, tuple[float, float | None]] = {}
    for line in text.splitlines():
        fields = _TASK_LABEL.sub("", line).split()
        if len(fields) >= 6 and fields[0].isdigit() and fields[1].isdigit():
            try:
                time_us = float(fields[5])
            except ValueError:
                continue
            try:
                busbw: float | None = float(fields[7])
            except (IndexError, ValueError):
                busbw = None
            rows[int(fields[0])] = (time_us, busbw)
    if not rows:
        raise AnalyzeError(
            f"{path}: no nccl-tests result rows (size count type redop root time ...) found"
        )
    return rows


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


# How reports are archived, and the command that unpacks them next to the archive (kept).
_UNPACK = {
    ".tar.gz": "tar -xzf",
    ".tgz": "tar -xzf",
    ".tar.xz": "tar -xJf",
    ".tar.zst": "tar --zstd -xf",
    ".tar": "tar -xf",
    ".xz": "xz -dk",
    ".gz": "gunzip -k",
    ".zst": "zstd -dk",
    ".bz2": "bunzip2 -k",
    ".zip": "unzip",
}


def _archive(path: Path) -> str | None:
    """The archive suffix of a file that may hold reports, or None."""
    name = path.name
    if not any(part in name for part in (".nsys-rep", ".sqlite")) and ".tar" not in name:
        return None
    return next((suffix for suffix in _UNPACK if name.endswith(suffix)), None)


def unpack_hint(files: list[Path]) -> str:
    """'; 2 are compressed reports, which analyze does not read: unpack them first: xz -dk
    DIR/*.sqlite.xz' for archived reports among `files`, or ''. Exports are often archived, and
    "no reports" alone leaves the user guessing."""
    archived = sorted(path for path in files if _archive(path))
    if not archived:
        return ""
    commands = []
    for suffix in dict.fromkeys(str(_archive(path)) for path in archived):
        group = [path for path in archived if path.name.endswith(suffix)]
        folder = shlex.quote(str(group[0].parent))
        if suffix.startswith((".tar", ".tgz")):  # tar takes one archive per call
            commands += [f"{_UNPACK[suffix]} {shlex.quote(str(p))} -C {folder}" for p in group]
        elif len(group) > 1:
            kinds = sorted({p.name.rsplit(".", 2)[-2] for p in group})
            middle = f".{kinds[0]}" if len(kinds) == 1 else ""
            commands.append(f"{_UNPACK[suffix]} {folder}/*{middle}{suffix}")
        else:
            commands.append(f"{_UNPACK[suffix]} {shlex.quote(str(group[0]))}")
    return (
        f"; {len(archived)} compressed report file(s), which analyze does not read: unpack "
        f"them first: {'; '.join(commands)}"
    )


def report_sources(path: Path) -> list[tuple[Path | None, Path | None]]:
    """(report, its SQLite export) for every report at `path`, each report once.

    A report and its export (`x.nsys-rep` and `x.sqlite`, as `nsys export` names them) are one
    report: reading both would count every call twice.
    """
    if not path.exists():
        raise AnalyzeError(f"{path}: no such file or folder")
    if path.is_file() and path.suffix == ".sqlite":
        # An export named on the command line is read as given.
        return [(None, path)]
    if path.is_dir():
        reports, exports = list(path.glob("*.nsys-rep")), list(path.glob("*.sqlite"))
    elif path.suffix == ".nsys-rep":
        reports, exports = [path], [path.with_suffix(".sqlite")]
    else:
        raise AnalyzeError(
            f"{path}: not a report (allowed: .nsys-rep, .sqlite, or a folder){unpack_hint([path])}"
        )
    # Hidden files are nsysgen's own exports in progress (export_sqlite).
    reports = [r for r in reports if not r.name.startswith(".")]
    exports = [e for e in exports if not e.name.startswith(".")]
    by_report = {r.with_suffix(""): r for r in reports if r.is_file()}
    by_export = {e.with_suffix(""): e for e in exports if e.is_file()}
    return [(by_report.get(stem), by_export.get(stem)) for stem in sorted({*by_report, *by_export})]
