"""A report's SQLite export, and the nsys that makes it: nsysgen/reports/export.py's, the one
the shipped verifier makes too, with analyze's own errors."""

from __future__ import annotations

from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.reports.export import NoNsys, export_path, is_current, make_export
from nsysgen.reports.export import find_nsys as nsys_to_use


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
