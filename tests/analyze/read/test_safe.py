"""Names read from reports in the analysis's files (nsysgen/analyze/read/safe.py): a collective's
name that is a path chooses no path, and a cell a spreadsheet would run is kept as text."""

from __future__ import annotations

import csv
from pathlib import Path

from nsysgen.analyze.read.safe import cell, op_file
from tests.analyze.read.test_steps import MS, make_db
from tests.conftest import RunCli


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


def test_hostile_collective_names_write_only_under_the_output(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """An NCCL kernel named as a path, in reports named as a spreadsheet formula, through
    `nsysgen analyze` as a user runs it: every file lands in --output (the reduced results
    beside the reports, as always), and no CSV cell is a formula."""
    reports = tmp_path / "deep" / "reports"
    reports.mkdir(parents=True)
    for rank in (0, 1):
        make_db(
            reports / f"=cmd|calc_job7_rank{rank}.sqlite",
            steps=[(s, s * 20 * MS, s * 20 * MS + 10 * MS) for s in range(4)],
            kernels=[
                (s * 20 * MS + MS, s * 20 * MS + 2 * MS, s * 20 * MS + 3 * MS, "ncclX/../../TRAVX")
                for s in range(4)
            ],
        )
    out = tmp_path / "deep" / "out"
    before = set(tmp_path.rglob("*"))
    result = run_cli("analyze", str(reports), "--serial", "--output", str(out))
    assert result.code == 0, result.err
    made = {p for p in set(tmp_path.rglob("*")) - before if p.parent != reports}
    assert any(p.name.startswith("nccl_ncclX_") for p in made)
    assert all(out in p.parents or p == out for p in made), sorted(map(str, made))
    cells = [
        c
        for table in out.glob("*.csv")
        for row in csv.reader(table.read_text().splitlines())
        for c in row
    ]
    assert any(c.startswith("'=cmd|calc") for c in cells)
    assert not [c for c in cells if c.startswith("=")]
