"""Issue 49's smaller points, as a new user meets them on the command line: a word for the
target that nsysgen names otherwise, a list without its brackets, a window of fast steps."""

from __future__ import annotations

from tests.conftest import RunCli


def test_scheduler_points_to_target(run_cli: RunCli) -> None:
    result = run_cli("plan", "scheduler=slurm")
    assert result.code == 2
    assert "scheduler: unknown key (did you mean target (target=slurm or target=eks)?)" in (
        result.err
    )


def test_a_list_without_brackets_gets_the_quoting_hint(run_cli: RunCli) -> None:
    result = run_cli("plan", "workload=fsdp", "workload.fsdp.args=--max_steps=500,--lr=1e-4")
    assert result.code == 2
    assert (
        "a list is written in brackets, items holding '=' quoted: "
        'workload.fsdp.args=\'["--max_steps=200", "--lr=1e-4"]\''
    ) in result.err
    hinted = 'workload.fsdp.args=["--max_steps=200", "--lr=1e-4"]'
    assert run_cli("plan", "workload=fsdp", hinted).code == 0  # the hint itself parses


def test_a_window_of_fast_steps_never_reads_from_a_time_to_itself(run_cli: RunCli) -> None:
    result = run_cli(
        "plan",
        "workload=python",
        "capture=steps",
        "capture.first_step=100",
        "capture.last_step=101",
        "workload.estimate.step_seconds=0.01",
    )
    assert result.code == 0, result.err
    assert "about 1.000 s to 1.020 s after the loop starts" in " ".join(result.out.split())
