"""What `nsysgen analyze` keeps between runs, beside each report, and when it still holds.

Exports: `x.nsys-rep` is exported to `x.sqlite` next to it, with `x.nsysgen-export.json` holding
the report's size, mtime (ns) and the SHA-256 of its first and last MiB. A changed report fails
that key and is exported again; an export without a key (made by hand or by an older nsysgen)
is used while it is newer than its report, as before.

Results: a report's reduced tables are kept in `x.nsysgen-reduced.json` (JSON: reading it runs
no code), keyed on the report's key, the export's size and mtime (or, for an export given
alone, its own key) and the code that reduces (a digest of its modules' source).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from nsysgen import __version__
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.read.report import Reduced
from nsysgen.analyze.read.steps import Collective, RankTables, StepRow
from nsysgen.reports.export import is_current

_CHUNK = 1 << 20


def key_file(report: Path) -> Path:
    return report.with_suffix(".nsysgen-export.json")


def report_key(report: Path) -> dict[str, Any]:
    """What identifies a report's content cheaply: size, mtime and its first and last MiB."""
    stat = report.stat()
    digest = hashlib.sha256()
    with report.open("rb") as handle:
        digest.update(handle.read(_CHUNK))
        if stat.st_size > _CHUNK:
            handle.seek(max(_CHUNK, stat.st_size - _CHUNK))
            digest.update(handle.read(_CHUNK))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256_ends": digest.hexdigest()}


def cache_state(report: Path, export: Path | None, key: dict[str, Any] | None = None) -> str:
    """ "valid", "stale" (the report changed) or "missing". `key`: the report's, if known."""
    if export is None or not export.is_file():
        return "missing"
    keyed = key_file(report)
    if keyed.is_file():
        try:
            saved = json.loads(keyed.read_text())
        except (OSError, ValueError):
            return "stale"
        return "valid" if saved == (key or report_key(report)) else "stale"
    # No key: made by hand, by the verifier or an older nsysgen; current by the shared rule.
    return "valid" if is_current(report, export) else "stale"


def reduced_file(source: Path) -> Path:
    """Where the result of a report's task is cached: next to the report (or lone export)."""
    return source.with_suffix(".nsysgen-reduced.json")


@functools.cache
def code_digest() -> str:
    """The code that makes a task's result: every module of read/ (a change to any of them
    redoes every result). The map step imports nothing of the analysis outside read/ (tests/
    analyze/read/test_cache.py holds it to that), so no module that shapes a result is missed."""
    digest = hashlib.sha256()
    try:
        for path in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    except OSError:  # installed without its sources: the version stands in for them
        return f"nsysgen {__version__}"
    return digest.hexdigest()


def reduced_key(report: Path | None, export: Path, key: dict[str, Any] | None) -> dict[str, Any]:
    """What a cached result must match: the report's key (`key`) and its export's size and
    mtime, or a lone export's own key; and the code."""
    if report is None:
        return {"code": code_digest(), "export": report_key(export)}
    stat = export.stat()
    return {
        "code": code_digest(),
        "report": key or report_key(report),
        "export": {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
    }


def _encode(reduced: Reduced) -> dict[str, Any]:
    return dataclasses.asdict(reduced)


def _decode(data: dict[str, Any]) -> Reduced:
    tables = [
        RankTables(
            **{
                **table,
                "steps": [StepRow(**row) for row in table["steps"]],
                "collectives": [Collective(**c) for c in table["collectives"]],
            }
        )
        for table in data["tables"]
    ]
    return Reduced(data["name"], [NcclCall(**c) for c in data["calls"]], tables)


def load_reduced(source: Path, key: dict[str, Any]) -> Reduced | None:
    """The cached result for `source` if its key is `key`; None if there is none or it is
    not usable (a missing, damaged or foreign file is recomputed, never an error)."""
    try:
        saved = json.loads(reduced_file(source).read_text())
        if saved.get("key") != key:
            return None
        return _decode(saved["result"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_reduced(source: Path, key: dict[str, Any], reduced: Reduced) -> None:
    """Best effort, and atomic: a reader sees the old file, the new one, or none."""
    target = reduced_file(source)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        partial.write_text(json.dumps({"key": key, "result": _encode(reduced)}))
        partial.replace(target)
    except OSError:  # a read-only folder, a full disk: the next run computes it again
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
