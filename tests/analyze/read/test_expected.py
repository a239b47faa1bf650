"""A rank the run contract expects and no report holds is named as not judged (issue 48 item 1):
the verdict never reads as if the job were smaller than the one that ran.

Real data: the two-rank H200 exports in tests/data/gpu/steps17 (rank 1 late by 25 ms a step),
beside a contract that expects four ranks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from nsysgen.analyze.read import expected
from tests.conftest import REPO, RunCli

GOLDEN = REPO / "tests" / "golden" / "local-python-steps" / "out" / "local-python-steps"
SLOW = sorted((REPO / "tests" / "data" / "gpu" / "steps17").glob("s17-slow_*.sqlite"))


def contract(folder: Path, nodes: int, locals_: list[int], per_node: int = 2) -> Path:
    """The golden contract, expecting `locals_` on each of `nodes` nodes of `per_node` ranks."""
    data: dict[str, Any] = json.loads((GOLDEN / "nsysgen-expect.json").read_text())
    group = data["reports"][0]
    group.update(nodes=[0, nodes], per_node=per_node, locals=locals_, collecting_locals=[])
    path = folder / "nsysgen-expect.json"
    path.write_text(json.dumps(data))
    return path


def test_missing_and_unexpected_ranks(tmp_path: Path) -> None:
    path = contract(tmp_path, nodes=4, locals_=[0, 1])  # ranks 0..7
    found = expected.compare(path, {0, 1, 3, 9})
    assert isinstance(found, expected.Comparison)
    assert (found.missing, found.unexpected) == ([2, 4, 5, 6, 7], [9])
    only_first = contract(tmp_path, nodes=3, locals_=[0], per_node=8)  # ranks 0, 8, 16
    assert expected.compare(only_first, {0, 8}) == expected.Comparison([16], [])


def test_an_unreadable_contract_is_said_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "nsysgen-expect.json"
    path.write_text('{"format": 3, "reports": 7}')
    said = expected.compare(path, {0})
    assert isinstance(said, str) and "ranks without a report are not named" in said


def test_the_contract_is_found_in_the_folder_or_the_one_above(tmp_path: Path) -> None:
    run = tmp_path / "reports" / "job7"
    run.mkdir(parents=True)
    assert expected.beside(run) is None
    above = contract(tmp_path / "reports", nodes=1, locals_=[0])
    assert expected.beside(run) == above and expected.beside(run / "x.sqlite") == above
    inside = contract(run, nodes=1, locals_=[0])
    assert expected.beside(run) == inside


def test_missing_ranks_are_named_first_and_the_late_rank_still_found(
    tmp_path: Path, run_cli: RunCli
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for export in SLOW:
        shutil.copy(export, run / export.name)
    contract(run, nodes=2, locals_=[0, 1])  # ranks 0..3; the reports hold 0 and 1
    out = tmp_path / "out"
    result = run_cli("analyze", str(run), "--serial", "--output", str(out))
    assert result.code == 0, result.err
    verdict = json.loads((out / "summary.json").read_text())["verdict"]
    assert verdict["not_judged"] == {"2": expected.NO_REPORT, "3": expected.NO_REPORT}
    assert verdict["text"].startswith(f"not judged: ranks 2 and 3 ({expected.NO_REPORT}); ")
    assert verdict["late_rank"] == 1
    assert f"verdict: {verdict['text']}" in result.out
    # Every rank there: nothing named; a rank the contract does not expect is a limit.
    contract(run, nodes=1, locals_=[0])  # rank 0 only
    again = run_cli("analyze", str(run), "--serial", "--output", str(tmp_path / "again"))
    summary = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert summary["verdict"]["not_judged"] == {} and summary["verdict"]["late_rank"] == 1
    assert any(limit.startswith("rank 1: reports the run contract") for limit in summary["limits"])
    assert again.code == 0
