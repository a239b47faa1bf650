"""`nsysgen check` (nsysgen/drivers/check.py), its units called directly: the regenerate command
for a folder (from here, from the directory it was compiled in, for a sweep point), each
finding's text, the summary line, and a sweep point compiled from other overrides.
tests/output/test_write_and_check.py runs whole checks through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsysgen.drivers.build import POINT_COMMAND, SWEEP_INDEX
from nsysgen.drivers.check import (
    CheckReport,
    Drift,
    _other_overrides,
    folder_hint,
    regenerate_hint,
    render_report,
)
from nsysgen.output.manifest import Manifest


def manifest(command: str, overrides: tuple[str, ...] = (), root: str = "") -> Manifest:
    return Manifest(command, overrides, (), {}, {}, root=root)


def test_the_regenerate_hint_adds_output_dir_and_changes_directory_when_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo").mkdir()
    here = regenerate_hint("nsysgen job.name=a", Path("out dir"))
    assert here == "nsysgen job.name=a 'output_dir=out dir'"
    assert regenerate_hint("nsysgen x=1", Path("out"), tmp_path) == "nsysgen x=1 output_dir=out"
    elsewhere = regenerate_hint("nsysgen x=1", tmp_path / "out", tmp_path / "repo")
    assert elsewhere == f"cd {tmp_path / 'repo'} && nsysgen x=1 output_dir=../out"


def test_a_sweep_points_hint_is_its_sweeps_command_from_above_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    point = Path("out") / "sw" / "capture.delay-1"
    point.mkdir(parents=True)
    assert folder_hint(point, manifest(POINT_COMMAND)) == POINT_COMMAND  # no index: as recorded
    index = {"command": "nsysgen -m capture.delay=1,2", "points": {"capture.delay-1": []}}
    (point.parent / SWEEP_INDEX).write_text(json.dumps(index))
    assert folder_hint(point, manifest(POINT_COMMAND)) == (
        "nsysgen -m capture.delay=1,2 output_dir=out"
    )
    assert folder_hint(point, manifest("nsysgen a=1")) == "nsysgen a=1 output_dir=out/sw"


def test_each_finding_reads_as_one_line_or_a_head_and_its_detail() -> None:
    path = Path("out/a/job.sbatch")
    assert (
        str(Drift(path, "missing", "nsysgen x"))
        == "out/a/job.sbatch: missing (regenerate: nsysgen x)"
    )
    assert str(Drift(path, "changed", "nsysgen x", "-a\n+b")) == (
        "out/a/job.sbatch: changed (regenerate: nsysgen x)\n-a\n+b"
    )
    cause = Drift(Path("out/a"), "input changed", "nsysgen x", "train.py changed")
    assert str(cause) == "out/a: cause: train.py changed (regenerate: nsysgen x)"


def test_the_summary_counts_problems_and_not_their_causes() -> None:
    out = Path("out")
    assert render_report(CheckReport(2, 17, []), out) == (
        "nsysgen check: 2 folders, 17 files current in out"
    )
    findings = [
        Drift(Path("out/a"), "input changed", "r", "train.py changed"),
        Drift(Path("out/a/job.sbatch"), "changed", "r", "-a\n+b"),
    ]
    assert render_report(CheckReport(1, 9, findings), out).splitlines()[-1] == (
        "nsysgen check: 1 problem in out; 1 folder(s) because an input file changed "
        "(nsysgen regenerate output_dir=out rewrites every stale folder; or undo the hand edits)"
    )


def test_a_point_from_other_overrides_names_what_differs() -> None:
    point = manifest(POINT_COMMAND, ("a=1", "b=2"))
    assert _other_overrides(point, ["a=1", "b=3"]) == (
        "point compiled from other overrides: b=2 (the sweep now has: b=3)"
    )
    assert _other_overrides(point, ["a=1"]) == (
        "point compiled from other overrides: b=2 (the sweep now has: none)"
    )
    assert _other_overrides(point, ["b=2", "a=1"]) == "point compiled from other overrides"
