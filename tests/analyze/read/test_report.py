"""One export opened once (nsysgen/analyze/read/report.py): what its 100-byte header says of a whole
or cut-off SQLite file (the 64 KiB page size's encoding and an older writer's page count
included), the refusal's words for one file and for many, and a report read under another
name."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.report import (
    export_problem,
    incomplete_export,
    read_export,
    refuse_incomplete,
)
from tests.conftest import REPO

EXPORT = REPO / "tests" / "data" / "gpu" / "steps17" / "s17-slow_job2_rank1.sqlite"


def header(page_size: int, pages: int, counter: int = 7, pages_for: int = 7) -> bytes:
    """An SQLite header with these fields (offsets 16, 24, 28 and 92), padded to 100 bytes."""
    data = bytearray(b"SQLite format 3\x00".ljust(100, b"\x00"))
    data[16:18] = page_size.to_bytes(2, "big")
    data[24:28] = counter.to_bytes(4, "big")
    data[28:32] = pages.to_bytes(4, "big")
    data[92:96] = pages_for.to_bytes(4, "big")
    return bytes(data)


def test_a_whole_export_has_no_problem_and_a_cut_one_says_how_short(tmp_path: Path) -> None:
    assert export_problem(EXPORT) is None
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(EXPORT.read_bytes()[:10_000])
    size = EXPORT.stat().st_size
    assert export_problem(cut) == f"cut short: 10000 of its {size} bytes"
    (tmp_path / "empty.sqlite").write_bytes(b"")
    assert export_problem(tmp_path / "empty.sqlite") == "an empty file: 0 bytes"
    (tmp_path / "short.sqlite").write_bytes(b"SQLite format 3\x00")  # under 100 bytes
    assert export_problem(tmp_path / "short.sqlite") == "not an SQLite file"


def test_the_header_fields_as_sqlite_writes_them(tmp_path: Path) -> None:
    file = tmp_path / "h.sqlite"
    # A page size of 1 means 65536: two pages of it are 131072 bytes.
    file.write_bytes(header(1, 2).ljust(100_000, b"\x00"))
    assert export_problem(file) == "cut short: 100000 of its 131072 bytes"
    file.write_bytes(header(1, 2).ljust(131_072, b"\x00"))
    assert export_problem(file) is None
    # An older writer's page count (not written at the last change) says nothing.
    file.write_bytes(header(4096, 50, counter=8, pages_for=7))
    assert export_problem(file) is None


def test_one_refusal_names_its_file_and_many_are_listed_at_once(tmp_path: Path) -> None:
    empty, text = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    empty.write_bytes(b"")
    text.write_text("x" * 200)
    with pytest.raises(AnalyzeError) as one:
        refuse_incomplete([EXPORT, empty])
    assert str(one.value) == str(incomplete_export(empty, "an empty file: 0 bytes"))
    assert str(one.value) == (
        f"{empty}: not a complete nsys SQLite export (an empty file: 0 bytes); re-export it "
        "with nsys export, or delete it"
    )
    with pytest.raises(AnalyzeError) as many:
        refuse_incomplete([empty, EXPORT, text])
    assert str(many.value).splitlines() == [
        "2 files are not complete nsys SQLite exports (re-export each with nsys export, or "
        "delete it):",
        f"  {empty}: an empty file: 0 bytes",
        f"  {text}: not an SQLite file",
    ]
    refuse_incomplete([EXPORT])  # nothing to refuse


def test_an_export_is_read_under_the_name_given(tmp_path: Path) -> None:
    reduced = read_export(EXPORT, "renamed_rank7")
    assert reduced.name == "renamed_rank7"
    (tables,) = reduced.tables
    # The rank comes from the name given, not the file's (rank 1).
    assert (tables.report, tables.rank) == ("renamed_rank7", 7)
    assert [row.step for row in tables.steps] == list(range(8, 16))
    assert read_export(EXPORT).tables[0].rank == 1
