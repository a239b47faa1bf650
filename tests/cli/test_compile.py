"""`nsysgen [compile]`'s own output (nsysgen/cli/compile.py): the summary of a folder (files by
status, `unchanged` on a recompile), of a sweep (points new, changed and unchanged, points
removed), and each lint warning printed once however many points share it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.cli.args import Arguments
from nsysgen.cli.compile import _file_counts, _sweep_summary, print_warnings, run_compile
from nsysgen.config.compose import Composer
from nsysgen.drivers.build import FolderResult, SweepResult
from nsysgen.output.write import FileStatus, Status
from nsysgen.profile.plan_types.plan import Finding


def folder(name: str, *statuses: Status, warnings: tuple[Finding, ...] = ()) -> FolderResult:
    files = [FileStatus(f"f{i}", status) for i, status in enumerate(statuses)]
    return FolderResult(Path("out/sw") / name, files, warnings)


def test_file_counts_in_a_fixed_order_with_readable_names() -> None:
    counts = {"identical": 3, "kept": 1, "created": 2, "removed": 0, "updated": 1}
    assert _file_counts(counts) == "2 created, 1 updated, 1 kept (edited by hand), 3 unchanged"


def test_the_sweep_summary_counts_points_and_files() -> None:
    sweep = SweepResult(
        root=Path("out/sw"),
        points=3,
        folders=[
            folder("a", "created", "created"),
            folder("b", "identical", "kept"),
            folder("c", "identical", "updated"),
        ],
        removed=[folder("d", "removed")],
    )
    assert _sweep_summary(sweep) == (
        "out/sw: sweep of 3 points (1 new, 1 changed, 1 unchanged); removed 1 point(s) no "
        "longer in the sweep; files: 2 created, 1 updated, 1 kept (edited by hand), 2 unchanged"
    )


def test_a_warning_shared_by_points_is_printed_once(capsys: pytest.CaptureFixture[str]) -> None:
    warning = Finding("NSG024", "warning", "capture.ranks", "8 ranks in 1 report", "one_per_node")
    other = Finding("NSG001", "warning", "capture.delay", "late", "earlier")
    print_warnings([folder("a", warnings=(warning,)), folder("b", warnings=(warning, other))])
    assert capsys.readouterr().err.splitlines() == [
        "warning: capture.ranks: [NSG024] 8 ranks in 1 report (fix: one_per_node)",
        "warning: capture.delay: [NSG001] late (fix: earlier)",
    ]


def test_a_recompile_says_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = Arguments(overrides=["job.name=a", "output_dir=out"])
    composer = Composer()
    assert run_compile(args, composer) == 0
    first = capsys.readouterr().out.splitlines()
    assert first[0].startswith("a run records: 1 report x 1 rank")
    assert first[-1] == "out/a: 7 files (7 created)"
    assert run_compile(args, composer) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "out/a: 7 files (unchanged)"
