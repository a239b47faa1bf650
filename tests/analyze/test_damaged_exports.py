"""`nsysgen analyze` on damaged reports: a real export cut short, emptied or garbled, and a real
report nsys cannot export. Each is refused by name, exit 2, before anything is written, in this
process (--serial) and on a Dask cluster alike; none is read as a report without NCCL calls."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, run_nsysgen_process, tree_bytes

GPU = REPO / "tests" / "data" / "gpu"
EXPORT = GPU / "nccl-allreduce.sqlite"  # nsys 2025.3.1, 2 x H200
REPORT = GPU / "steps-launch-window-40-44.nsys-rep"
HOW = {"serial": ["--serial"], "dask": ["--workers", "2"]}
# The Dask variants start a local cluster each (seconds): the slow tier runs them.
HOWS = [pytest.param(name, marks=[pytest.mark.slow] if name == "dask" else []) for name in HOW]
REFUSED = "not a complete nsys SQLite export"
REEXPORT = "re-export it with nsys export, or delete it\n"


def cut(source: Path, target: Path, keep: int) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes()[:keep])
    return target


def garbled(target: Path) -> Path:
    """The export at its full size, every page after its schema's overwritten: what a disk or a
    copy can do that no size or header shows."""
    data = bytearray(EXPORT.read_bytes())
    rng = random.Random(0)
    for page in range(20, len(data) // 4096):
        data[page * 4096 : (page + 1) * 4096] = rng.randbytes(4096)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(data))
    return target


def refused(run_cli: RunCli, reports: Path, *args: str) -> str:
    """Run analyze on `reports`, which it must refuse with exit 2, leaving its folder as it was.
    On a Dask cluster as a process of its own: the workers' log goes to its stderr, not to
    this process's, where run_cli looks."""
    folder = reports if reports.is_dir() else reports.parent
    before = tree_bytes(folder)
    if "--workers" in args:
        result = run_nsysgen_process("analyze", str(reports), *args, cwd=folder)
    else:
        result = run_cli("analyze", str(reports), *args)
    assert result.code == 2, result.out + result.err
    assert result.out == "" and "Traceback" not in result.err, result.err
    assert "internal error" not in result.err and "Compute Failed" not in result.err, result.err
    assert tree_bytes(folder) == before  # no analysis/, no cached result, no export
    return result.err


@pytest.mark.parametrize("how", HOWS)
def test_an_export_cut_to_half_is_refused_by_name(
    tmp_path: Path, run_cli: RunCli, how: str
) -> None:
    size = EXPORT.stat().st_size
    export = cut(EXPORT, tmp_path / "r" / "r.sqlite", size // 2)
    err = refused(run_cli, export.parent, *HOW[how])
    assert err == (
        f"error: {export}: {REFUSED} (cut short: {size // 2} of its {size} bytes); {REEXPORT}"
    )


@pytest.mark.parametrize("how", HOWS)
def test_an_empty_export_is_refused_not_read_as_no_calls(
    tmp_path: Path, run_cli: RunCli, how: str
) -> None:
    export = cut(EXPORT, tmp_path / "r" / "r.sqlite", 0)
    err = refused(run_cli, export.parent, *HOW[how])
    assert err == f"error: {export}: {REFUSED} (an empty file: 0 bytes); {REEXPORT}"
    assert refused(run_cli, export, *HOW[how]) == err  # named on its own, as a file


def test_every_damaged_export_of_a_folder_is_named_at_once(tmp_path: Path, run_cli: RunCli) -> None:
    folder = tmp_path / "r"
    short = cut(EXPORT, folder / "r_rank1.sqlite", 4096 * 3)
    empty = cut(EXPORT, folder / "r_rank2.sqlite", 0)
    not_sqlite = cut(REPORT, folder / "r_rank3.sqlite", 200)  # a report renamed
    shutil.copy(EXPORT, folder / "r_rank0.sqlite")  # whole: not named
    err = refused(run_cli, folder, "--serial")
    assert err.splitlines() == [
        "error: 3 files are not complete nsys SQLite exports (re-export each with nsys export, "
        "or delete it):",
        f"  {short}: cut short: 12288 of its {EXPORT.stat().st_size} bytes",
        f"  {empty}: an empty file: 0 bytes",
        f"  {not_sqlite}: not an SQLite file",
    ]


@pytest.mark.parametrize("how", HOWS)
def test_damage_inside_an_export_of_its_full_size_is_refused(
    tmp_path: Path, run_cli: RunCli, how: str
) -> None:
    """Found only by reading it: on a Dask worker too, whose error comes back as the user's,
    not as a failed task that Dask logs with its traceback."""
    export = garbled(tmp_path / "r" / "r.sqlite")
    err = refused(run_cli, export.parent, *HOW[how])
    assert err == (
        f"error: {export}: {REFUSED} (SQLite says: database disk image is malformed); {REEXPORT}"
    )


def test_an_sqlite_file_without_tables_is_not_an_export(tmp_path: Path, run_cli: RunCli) -> None:
    export = tmp_path / "r" / "r.sqlite"
    export.parent.mkdir()
    with closing(sqlite3.connect(export)) as db:
        db.execute("PRAGMA user_version = 1")  # writes the header: a whole, empty database
        db.commit()
    err = refused(run_cli, export.parent, "--serial")
    assert err == f"error: {export}: {REFUSED} (an SQLite file without tables); {REEXPORT}"


def test_an_empty_export_beside_its_report_is_refused_not_taken_as_current(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a failed `nsys export REPORT` by hand leaves (nsys 2023.4.4, on a damaged report):
    an empty export, newer than its report, which analyze would otherwise take as current."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-nsys"))
    monkeypatch.delenv("NSYS", raising=False)
    report = tmp_path / "r" / "r.nsys-rep"
    cut(REPORT, report, REPORT.stat().st_size // 2)
    export = cut(EXPORT, report.with_suffix(".sqlite"), 0)
    os.utime(report, (1_000_000, 1_000_000))
    err = refused(run_cli, report.parent, "--serial")
    assert err == f"error: {export}: {REFUSED} (an empty file: 0 bytes); {REEXPORT}"


@pytest.mark.nsys
@pytest.mark.parametrize("how", HOWS)
def test_a_report_cut_short_fails_its_export_by_name(
    tmp_path: Path, run_cli: RunCli, real_nsys: Path, how: str
) -> None:
    """A report nsys cannot export never reaches the reading of an export: nsys's own refusal,
    named, and no export (partial or empty) left behind to be taken as current next time."""
    report = cut(REPORT, tmp_path / "r" / "r.nsys-rep", REPORT.stat().st_size // 2)
    err = refused(run_cli, report.parent, *HOW[how], "--nsys", str(real_nsys))
    assert err.startswith(f"error: nsys export failed for {report}: "), err


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("DROP TABLE StringIds", "SQLite says: no such table: StringIds"),
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL",
            "a value of a type nsys does not write",
        ),
    ],
    ids=["no-strings", "null-process"],
)
def test_an_export_of_tables_nsys_does_not_write_is_refused_by_name(
    tmp_path: Path, run_cli: RunCli, how: str, sql: str, why: str
) -> None:
    export = tmp_path / "r" / "r_rank0.sqlite"
    export.parent.mkdir()
    shutil.copy(EXPORT, export)
    with closing(sqlite3.connect(export)) as db:
        db.execute(sql)
        db.commit()
    err = refused(run_cli, export.parent, *HOW[how])
    assert err.startswith(f"error: {export}: {REFUSED} ({why}"), err
    assert "Traceback" not in err
