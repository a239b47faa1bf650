"""Names read from reports in the analysis's files (nsysgen/analyze/safe.py): a collective's name
that is a path chooses no path, and a cell a spreadsheet would run is kept as text."""

from __future__ import annotations

from pathlib import Path

from nsysgen.analyze.safe import cell, op_file


def test_an_operation_named_as_a_path_stays_a_file_name(tmp_path: Path) -> None:
    assert op_file("ncclAllReduce", "durations") == "nccl_ncclAllReduce_durations.png"
    hostile = op_file("x/../../TRAVX", "by_size")
    assert "/" not in hostile and ".." not in hostile and hostile.startswith("nccl_x_TRAVX-")
    assert (tmp_path / hostile).parent == tmp_path
    # Two names made alike by the replacement still get two files.
    assert op_file("a/b", "durations") != op_file("a?b", "durations")
    assert "$" not in op_file("$x$", "durations")  # no mathtext in a file name either


def test_a_cell_a_spreadsheet_would_run_is_kept_as_text() -> None:
    assert cell("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0"
    assert [cell(v) for v in ("+1", "-x", "@SUM(A1)", "\tx")] == ["'+1", "'-x", "'@SUM(A1)", "'\tx"]
    assert [cell(v) for v in ("ncclAllReduce", -1.5, 3, "")] == ["ncclAllReduce", -1.5, 3, ""]
