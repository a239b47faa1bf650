"""The one export of a report (nsysgen/reports/export.py) that `nsysgen analyze` and the shipped
verifier both make: the switches this nsys accepts, a hidden name renamed into place once whole,
nothing left behind by a failed export, and an up-to-date export reused. nsys is a stand-in
script here (a real process, which records how it was called): the real nsys's export is
tested in tests/compile/test_verify_export.py and tests/analyze/test_damaged_exports.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.export import export_sqlite, find_nsys
from nsysgen.reports import export
from nsysgen.reports.export import NoNsys, current_export, make_export
from nsysgen.shipped.verify.tools import Tools
from nsysgen.shipped.verify.tools import export_sqlite as verify_export

# A stand-in nsys: `export --help` lists the switches in $SWITCHES; `export ... --output OUT`
# appends its arguments to $CALLS and writes OUT, or fails half-way when $FAIL is set.
STAND_IN = """#!/bin/sh
if [ "$1 $2" = "export --help" ]; then echo "usage: nsys export $SWITCHES"; exit 0; fi
echo "$*" >> "$CALLS"
while [ $# -gt 1 ]; do [ "$1" = --output ] && out=$2; shift; done
echo "SQLite export" > "$out"
if [ -n "$FAIL" ]; then echo "[3/8] [=====     ] 40%"; echo "ProtobufParseException" >&2; exit 3; fi
exit 0
"""


@pytest.fixture
def nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tool = tmp_path / "bin" / "nsys"
    tool.parent.mkdir()
    tool.write_text(STAND_IN)
    tool.chmod(0o755)
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("SWITCHES", "--include-blobs")
    monkeypatch.delenv("FAIL", raising=False)
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setattr(export, "_SWITCHES", {})
    return tool


def report(tmp_path: Path) -> Path:
    path = tmp_path / "r" / "t_job7_rank0.nsys-rep"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"report")
    os.utime(path, (1_000, 1_000))
    return path


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.is_file() else []


def test_only_the_switches_this_nsys_accepts_are_passed(nsys: Path, tmp_path: Path) -> None:
    rep = report(tmp_path)
    made, why = make_export(str(nsys), rep)
    assert (made, why) == (rep.with_suffix(".sqlite"), "")
    (call,) = calls(tmp_path)
    assert "--include-blobs true" in call and "--include-json" not in call
    assert sorted(p.name for p in rep.parent.iterdir()) == [rep.name, f"{rep.stem}.sqlite"]


def test_a_failed_export_leaves_nothing_and_says_what_nsys_said(
    nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIL", "1")
    rep = report(tmp_path)
    made, why = make_export(str(nsys), rep)
    assert made is None and why == "exit 3: ProtobufParseException"  # progress lines dropped
    assert [p.name for p in rep.parent.iterdir()] == [rep.name]  # no partial, no export
    # Each side frames it for its user: the verifier's finding, analyze's error.
    assert verify_export(Tools(str(nsys), None, None), rep)[1] == (
        "nsys export failed (exit 3: ProtobufParseException)"
    )
    with pytest.raises(AnalyzeError, match=f"nsys export failed for {rep}: exit 3"):
        export_sqlite(rep, str(nsys))


def test_an_nsys_that_cannot_be_started_is_a_failed_export_not_a_crash(tmp_path: Path) -> None:
    # An executable the kernel refuses (ENOEXEC here; EFAULT was seen under load on the GPU
    # machine): each side says so for its user, as for any failed export.
    tool = tmp_path / "nsys"
    tool.write_bytes(b"\x7fELF not a program")
    tool.chmod(0o755)
    rep = report(tmp_path)
    made, why = make_export(str(tool), rep)
    assert made is None and why == f"{tool} could not be started (Exec format error)"
    assert [p.name for p in rep.parent.iterdir()] == [rep.name]
    assert verify_export(Tools(str(tool), None, None), rep)[1] == f"nsys export failed ({why})"
    with pytest.raises(AnalyzeError, match="could not be started"):
        export_sqlite(rep, str(tool))


def test_analyze_and_the_verifier_export_alike_and_reuse_each_others_export(
    nsys: Path, tmp_path: Path
) -> None:
    rep = report(tmp_path)
    made, _ = verify_export(Tools(str(nsys), None, None), rep)
    assert made is not None
    assert export_sqlite(rep, str(nsys)) == made  # current: analyze does not export again
    assert len(calls(tmp_path)) == 1
    assert export_sqlite(rep, str(nsys), force=True) == made
    first, second = calls(tmp_path)
    assert first == second  # the same command line, from the same code
    assert current_export(None, rep) == (made, "")  # no nsys needed for a current export


def test_the_users_own_nsys_must_be_there(
    nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NoNsys, match="--nsys /nowhere/nsys: no such executable"):
        export.find_nsys("/nowhere/nsys")
    monkeypatch.setenv("NSYS", "/nowhere/nsys")
    with pytest.raises(NoNsys, match="NSYS /nowhere/nsys: no such executable"):
        export.find_nsys(None)
    with pytest.raises(AnalyzeError, match="no nsys to export .nsys-rep reports with"):
        find_nsys(None)
    monkeypatch.delenv("NSYS")
    # The setup's nsys is a cluster path, often absent where the reports are read: PATH's then.
    monkeypatch.setenv("PATH", str(nsys.parent))
    assert export.find_nsys(None, "/fsx/nsight/nsys") == str(nsys)
    assert export.find_nsys("nsys") == str(nsys)
