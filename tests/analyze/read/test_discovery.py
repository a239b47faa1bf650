"""Which reports a path holds (nsysgen/analyze/read/discovery.py): a report and its export are
one report, hidden files are exports in progress, and archived reports get the command that
unpacks them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.discovery import report_sources, unpack_hint


def test_a_report_and_its_export_are_one_report(tmp_path: Path) -> None:
    for name in ("a.nsys-rep", "a.sqlite", "b.nsys-rep", "c.sqlite", ".d.sqlite", "notes.txt"):
        (tmp_path / name).write_text("x")
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    assert report_sources(tmp_path) == [
        (a.with_suffix(".nsys-rep"), a.with_suffix(".sqlite")),
        (b.with_suffix(".nsys-rep"), None),
        (None, c.with_suffix(".sqlite")),
    ]
    assert report_sources(c.with_suffix(".sqlite")) == [(None, c.with_suffix(".sqlite"))]
    assert report_sources(b.with_suffix(".nsys-rep")) == [(b.with_suffix(".nsys-rep"), None)]


def test_what_is_no_report_is_an_input_error_with_the_unpacking_command(tmp_path: Path) -> None:
    with pytest.raises(AnalyzeError, match="no such file or folder"):
        report_sources(tmp_path / "absent")
    archived = tmp_path / "run.sqlite.xz"
    archived.write_text("x")
    with pytest.raises(AnalyzeError) as error:
        report_sources(archived)
    assert str(error.value) == (
        f"{archived}: not a report (allowed: .nsys-rep, .sqlite, or a folder); 1 compressed "
        f"report file(s), which analyze does not read: unpack them first: xz -dk {archived}"
    )


def test_archives_are_unpacked_one_command_per_kind(tmp_path: Path) -> None:
    files = [tmp_path / n for n in ("a.sqlite.xz", "b.sqlite.xz", "r.tar.gz", "x.log")]
    hint = unpack_hint(files)
    assert hint == (
        f"; 3 compressed report file(s), which analyze does not read: unpack them first: "
        f"xz -dk {tmp_path}/*.sqlite.xz; tar -xzf {tmp_path / 'r.tar.gz'} -C {tmp_path}"
    )
    assert unpack_hint([tmp_path / "x.log"]) == ""
