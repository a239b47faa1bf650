"""`nsysgen plan` as a verb (nsysgen/cli/plan.py): which recorded tasks its report names spell
out (the first 8, --expand N, --ranks A-B, both), one JSON object per sweep point named by the
point, and exit 2 when any point has a lint error (the plan is still printed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nsysgen.cli.args import parse_arguments
from nsysgen.cli.plan import run_plan
from nsysgen.config.compose import Composer
from nsysgen.errors import EXIT_INVALID, EXIT_OK

ALL_32 = ["cluster.nodes=4", "capture.ranks=all"]  # 4 nodes x 8 GPUs, every rank records


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def plan(composer: Composer, capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = run_plan(parse_arguments(["plan", "--json", *words]), composer)
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("flags", "tasks"),
    [
        ([], [0, 1, 2, 3, 4, 5, 6, 7]),
        (["--expand", "3"], [0, 1, 2]),
        (["--ranks", "30-40"], [30, 31]),  # to the last task there is
        (["--ranks", "30-40", "--expand", "1"], [30]),
        (["--ranks", "9"], [9]),
    ],
)
def test_the_tasks_whose_report_names_are_spelled_out(
    composer: Composer, capsys: pytest.CaptureFixture[str], flags: list[str], tasks: list[int]
) -> None:
    code, data = plan(composer, capsys, *flags, *ALL_32)
    assert code == EXIT_OK
    assert [row["task"] for row in data["recording"]] == tasks
    assert data["recorded_ranks"]["reports"] == 32


def test_a_sweep_is_one_object_per_point_and_exits_2_on_a_lint_error(
    composer: Composer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data = plan(composer, capsys, "-m", "capture.delay=5,30")
    assert code == EXIT_INVALID  # nccl-tests end before a 30 s delay: NSG018 is an error
    assert list(data) == ["delay-5", "delay-30"]
    assert data["delay-5"]["job"] == "nccl-p5-slurm-delay-5"
    assert [lint["id"] for lint in data["delay-5"]["lints"]] == []
    assert [lint["id"] for lint in data["delay-30"]["lints"]] == ["NSG018"]


def test_the_sweep_table_has_a_row_per_point(
    composer: Composer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # the table fits the terminal: wide enough for names
    code = run_plan(parse_arguments(["plan", "-m", "capture.delay=3,5"]), composer)
    lines = capsys.readouterr().out.splitlines()
    assert code == EXIT_OK
    assert lines[0].split()[:2] == ["point", "job"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["delay-3", "nccl-p5-slurm-delay-3"],
        ["delay-5", "nccl-p5-slurm-delay-5"],
    ]
