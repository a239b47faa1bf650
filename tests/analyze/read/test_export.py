"""The export analyze reads (nsysgen/analyze/read/export.py): an up-to-date one is reused
without nsys, and a missing nsys is an input error naming where it may come from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.export import export_sqlite, find_nsys


def test_a_current_export_is_read_without_nsys(tmp_path: Path) -> None:
    report, export = tmp_path / "r.nsys-rep", tmp_path / "r.sqlite"
    report.write_text("report")
    export.write_text("export")
    os.utime(report, (1_000, 1_000))  # the export is newer than its report
    assert export_sqlite(report, "/nonexistent/nsys") == export


def test_no_nsys_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NSYS", raising=False)
    with pytest.raises(AnalyzeError, match=r"no nsys to export .nsys-rep reports with .*--nsys"):
        find_nsys(None)
