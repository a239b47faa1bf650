"""nsysgen verify without a cluster: the expectations agree with the plan, report names become
the right patterns, and the checks of a report's contents say what is wrong."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nsysgen import model
from nsysgen.compose import Composer
from nsysgen.lints import Finding, run_lints
from nsysgen.plan import build_plan
from nsysgen.targets import TARGETS
from nsysgen.teardown import sbatch_options, write_seconds
from nsysgen.verify_core import Contents, check_contents, main
from nsysgen.verify_expect import expectations, generic_regex
from tests.conftest import EXPERIMENTS


def config(*overrides: str) -> model.Config:
    return model.from_dict(Composer().compose(list(overrides)).data)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_verify_expects_every_report_plan_promises(experiment: str) -> None:
    cfg = config(f"experiment={experiment}")
    plan = build_plan(cfg, TARGETS[cfg.target.name])
    expect = expectations(cfg, plan)
    assert len(expect["reports"]) == len(plan.recorded) > 0
    for entry, task in zip(expect["reports"], plan.recorded, strict=True):
        assert (entry["task"], entry["node"], entry["collectors"]) == (
            task.task,
            task.node,
            task.collectors,
        )
        # The planned name, with its run-time parts filled in, is what the pattern matches.
        name = Path(task.report).name
        filled = re.sub(r"<jobid>", "4242", name)
        filled = re.sub(r"<host\d+>", "ip-10-0-0-1", filled)
        filled = re.sub(r"<[a-z]+>", "123", filled)
        match = re.fullmatch(entry["regex"], filled)
        assert match, (entry["regex"], filled)
        assert re.fullmatch(expect["generic_regex"], filled)
    assert expect["trace"] == list(cfg.capture.trace)
    assert expect["capture"]["mode"] == cfg.capture.mode


def test_generic_pattern_names_the_slurm_variables() -> None:
    regex = generic_regex("j_job%q{SLURM_JOB_ID}_rank%q{SLURM_PROCID}_%q{SLURMD_NODENAME}")
    match = re.fullmatch(regex, "j_job7_rank3_node2")
    assert match and match.groupdict() == {
        "SLURM_JOB_ID": "7",
        "SLURM_PROCID": "3",
        "SLURMD_NODENAME": "node2",
    }


def expect_for(*overrides: str) -> dict[str, object]:
    return expectations(config("cluster=local", "workload=python", *overrides))


def test_steps_must_be_exactly_the_window() -> None:
    expect = expect_for("capture=steps", "capture.first_step=3", "capture.last_step=5")
    ok = Contents(["step 3", "step 4", "step 5"], 10, 0, 0, 1.0)
    assert check_contents(expect, ok, False).status == "ok"
    short = Contents(["step 3", "step 4"], 10, 0, 0, 1.0)
    found = check_contents(expect, short, False)
    assert found.problems == ["holds steps 3..4, asked 3..5"]
    assert found.causes == ["the job ended (or was stopped) before step 5"]
    never = check_contents(expect, Contents([], 0, 0, 0, 1.0), False)
    assert "no step ranges: asked steps 3..5" in never.problems
    assert never.causes[0].startswith("window never reached: the job ended before step 3")
    assert "no CUDA kernels although cuda is traced" in never.problems


def test_window_length_nvtx_range_and_collectors() -> None:
    window = expect_for("capture=window", "capture.delay=5", "capture.duration=30")
    assert check_contents(window, Contents(["x"], 1, 0, 0, 29.0), False).status == "ok"
    found = check_contents(window, Contents(["x"], 1, 0, 0, 9.0), False)
    assert found.problems == ["capture lasted 9.0 s, asked 30 s (tolerance 3.0 s)"]
    nvtx = expect_for("capture=nvtx", "capture.nvtx_range=profile", "capture.gpu_metrics=true")
    found = check_contents(nvtx, Contents(["step 1"], 1, 0, 5, None), False)
    assert "no NVTX range 'profile'" in found.problems
    assert "GPU metrics in a report that should not collect them" in found.problems
    assert check_contents(nvtx, Contents(["profile"], 1, 0, 0, None), True).problems == [
        "no GPU metrics although this report should hold them"
    ]


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    assert "nsysgen-expect.json not found" in capsys.readouterr().err
    (tmp_path / "nsysgen-expect.json").write_text(json.dumps({"format": 1, **expect_for()}))
    assert main([str(tmp_path), "--reports", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "r").mkdir()
    assert main([str(tmp_path), "--reports", str(tmp_path / "r")]) == 2
    assert "no report or job record of job" in capsys.readouterr().err


def test_teardown_signal_only_where_the_capture_may_be_open() -> None:
    assert sbatch_options(config("capture=nvtx")) == {"signal": f"TERM@{write_seconds(config())}"}
    early = config("capture=window", "capture.delay=30", "capture.duration=60")
    assert sbatch_options(early) == {}
    late = config("capture=window", "capture.delay=3500", "capture.duration=60")
    assert sbatch_options(late) == {"signal": "TERM@60"}


def _lints(cfg: model.Config) -> list[Finding]:
    target = TARGETS[cfg.target.name]
    return run_lints(cfg, build_plan(cfg, target), target)


def test_lint_no_room_to_write_the_report() -> None:
    cfg = config("capture=window", "capture.delay=3500", "capture.duration=60")
    findings = [
        f
        for f in run_lints(cfg, build_plan(cfg, TARGETS[cfg.target.name]), TARGETS[cfg.target.name])
        if f.lint == "NSG013"
    ]
    assert len(findings) == 1 and findings[0].severity == "warning"
    assert "past the time limit of 3600 s" in findings[0].message
    cfg = config("capture=window", "capture.delay=30", "capture.duration=60")
    assert not [
        f
        for f in run_lints(cfg, build_plan(cfg, TARGETS[cfg.target.name]), TARGETS[cfg.target.name])
        if f.lint == "NSG013"
    ]
