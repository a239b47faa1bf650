"""The analysis's output folder holds one analysis (nsysgen/analyze/outdir.py): a second run
into it while one writes is refused with the holder named; a run that fails leaves the previous
analysis byte for byte; a finished run replaces it whole (a user's file stays); nothing is
written outside --output. On real exports (tests/data/gpu/steps17)."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze import outdir
from nsysgen.analyze.judge.summary_types import SCHEMA
from tests.analyze.test_partial_reports import slow_run as reports
from tests.conftest import RunCli, tree_bytes


def analyze(run_cli: RunCli, folder: Path, out: Path, *more: str) -> tuple[int, str]:
    result = run_cli("analyze", str(folder), "--output", str(out), "--serial", *more)
    return result.code, result.out + result.err


def test_a_failed_rerun_leaves_the_previous_analysis_untouched(
    tmp_path: Path, run_cli: RunCli
) -> None:
    folder, out = reports(tmp_path / "r"), tmp_path / "out"
    code, said = analyze(run_cli, folder, out)
    assert code == 0, said
    before = tree_bytes(out)
    # A baseline of the right schema with fields of the wrong type: the run fails after it has
    # written its CSVs (into its fresh folder), with a clear error, exit 2.
    cases: list[dict[str, Any]] = [
        {"ranks": [{"steps": 5}], "by_step": "x"},  # wrong inside: found when compared
        {"ranks": 5},  # wrong at the top: found when read
        {"world_size": "eight"},
        {"thresholds": [1, 2]},
        {"world_size": float("inf")},  # json writes Infinity, which json reads back
        {"job_median_step_ms": 10**400},  # beyond a float
    ]
    for number, fields in enumerate(cases):
        bad = tmp_path / f"bad{number}" / "summary.json"
        bad.parent.mkdir()
        bad.write_text(json.dumps({"schema": SCHEMA, **fields}))
        code, said = analyze(
            run_cli, folder, out, "--baseline", str(bad.parent), "--straggler-min-ms", "2"
        )
        assert code == 2, (fields, said)
        assert "its summary.json has fields of the wrong type" in said, said
        assert "Traceback" not in said
        assert tree_bytes(out) == before
    deep = tmp_path / "deep" / "summary.json"  # nested past what json reads
    deep.parent.mkdir()
    deep.write_text(f'{{"schema": "{SCHEMA}", "ranks": {"[" * 5000}{"]" * 5000}}}')
    code, said = analyze(run_cli, folder, out, "--baseline", str(deep.parent))
    assert code == 2 and "not a readable summary.json" in said and "Traceback" not in said
    assert not list(tmp_path.glob(f".out.*{outdir.STAGING}"))


def test_a_finished_run_replaces_the_analysis_whole_and_keeps_a_users_file(
    tmp_path: Path, run_cli: RunCli
) -> None:
    folder, out = reports(tmp_path / "r"), tmp_path / "out"
    assert analyze(run_cli, folder, out)[0] == 0
    (out / "notes.txt").write_text("mine")
    (out / "steps.csv").write_text("stale")  # the previous analysis's own: written anew
    code, said = analyze(run_cli, folder, out, "--straggler-min-ms", "2")
    assert code == 0, said
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "steps.csv").read_text() != "stale"
    assert f"wrote {out}/summary.json" in said and outdir.STAGING not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "r"]  # nothing beside it


def test_a_second_run_while_one_writes_is_refused_and_names_it(
    tmp_path: Path, run_cli: RunCli
) -> None:
    folder, out = reports(tmp_path / "r"), tmp_path / "out"
    assert analyze(run_cli, folder, out)[0] == 0
    before = tree_bytes(out)
    with outdir.locked(out):
        code, said = analyze(run_cli, folder, out, "--straggler-min-ms", "2")
        assert code == 2
        assert "another nsysgen analyze is writing it" in said and "Traceback" not in said
        (tmp_path / f".out.pid4242@node-7.abc{outdir.STAGING}").mkdir()
        code, said = analyze(run_cli, folder, out, "--straggler-min-ms", "2")
        assert "(pid 4242 on node-7)" in said
    assert tree_bytes(out) == before


def test_an_output_under_a_file_is_exit_2(tmp_path: Path, run_cli: RunCli) -> None:
    folder = reports(tmp_path / "r")
    (tmp_path / "file").write_text("")
    code, said = analyze(run_cli, folder, tmp_path / "file" / "out")
    assert code == 2, said
    assert "cannot write there" in said and "Traceback" not in said


@contextlib.contextmanager
def read_only(source: Path, target: Path) -> Iterator[Path]:
    """`source` seen read-only at `target` (a bind mount, as root); skipped where mounting is
    not allowed."""
    target.mkdir()
    bound = subprocess.run(["mount", "--bind", str(source), str(target)], check=False)
    if bound.returncode != 0:
        pytest.skip("mount --bind is not allowed here")
    try:
        ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], check=False)
        assert ro.returncode == 0
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_a_read_only_file_system_for_reports_or_output(tmp_path: Path, run_cli: RunCli) -> None:
    """Reports on a read-only file system are analysed (their cache is skipped, not raised);
    an --output on one is refused, exit 2, naming it."""
    folder = reports(tmp_path / "r")
    with read_only(folder, tmp_path / "ro") as ro:
        code, said = analyze(run_cli, ro, tmp_path / "out")
        assert code == 0, said
        assert (tmp_path / "out" / "summary.json").is_file()
        code, said = analyze(run_cli, folder, ro / "analysis")
        assert code == 2, said
        assert "cannot write there (Read-only file system)" in said and "Traceback" not in said


def test_an_immutable_output_folder_is_exit_2(tmp_path: Path, run_cli: RunCli) -> None:
    folder = reports(tmp_path / "r")
    locked = tmp_path / "immutable"
    locked.mkdir()
    if subprocess.run(["chattr", "+i", str(locked)], check=False).returncode != 0:
        pytest.skip("chattr +i is not allowed here")
    try:
        code, said = analyze(run_cli, folder, locked / "out")
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=False)
    assert code == 2, said
    assert "cannot write there (Operation not permitted)" in said and "Traceback" not in said
