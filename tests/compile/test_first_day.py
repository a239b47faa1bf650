"""Issue 49's smaller points, as a new user meets them on the command line: a word for the
target that nsysgen names otherwise, a list without its brackets, a window of fast steps."""

from __future__ import annotations

from pathlib import Path

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


OWN = ["target.job_script=yours", "workload=command", "workload.command.argv=[bash,t.sh]"]


def test_an_environment_file_off_the_shared_filesystem_is_said(
    run_cli: RunCli, tmp_path: Path
) -> None:
    result = run_cli(*OWN, f"output_dir={tmp_path}")
    assert result.code == 0, result.err
    said = " ".join(result.out.split())
    assert (
        f"warning: {tmp_path.resolve()}/command-p5-slurm is a path on this machine, not under "
        in said
    )
    assert "cluster.shared_fs=/fsx: copy the folder" in said


def test_an_environment_file_on_the_shared_filesystem_is_not_warned(
    run_cli: RunCli, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    result = run_cli(*OWN, f"cluster.shared_fs={shared}", f"output_dir={shared}/setups")
    assert result.code == 0, result.err
    assert "is a path on this machine" not in result.out
