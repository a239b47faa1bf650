"""Sweeps: Hydra's grammar, paired values, stable names, the index, all-or-nothing writes."""

from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RunCli, run_nsysgen_process, tree_bytes


def points(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["capture.delay=30,60", "capture.duration=30,60"],
            [
                "delay-30_duration-30",
                "delay-30_duration-60",
                "delay-60_duration-30",
                "delay-60_duration-60",
            ],
        ),
        (["capture.delay=range(10,40,10)"], ["delay-10", "delay-20", "delay-30"]),
        (["capture.delay=choice(5,7)"], ["delay-5", "delay-7"]),
        (["cluster=glob(p5*)"], ["cluster-p5", "cluster-p5e", "cluster-p5en"]),
        (
            ["cluster=p4de,p5", "capture.ranks=[0],one_per_node"],
            [
                "cluster-p4de_ranks-0",
                "cluster-p4de_ranks-one-per-node",
                "cluster-p5_ranks-0",
                "cluster-p5_ranks-one-per-node",
            ],
        ),
        (
            ["capture.delay+capture.duration=30:60,90:30"],
            ["delay-30_duration-60", "delay-90_duration-30"],
        ),
        (
            ["cluster=p4de,p5", "capture.delay+capture.duration=30:60,90:30"],
            [
                "cluster-p4de_delay-30_duration-60",
                "cluster-p4de_delay-90_duration-30",
                "cluster-p5_delay-30_duration-60",
                "cluster-p5_delay-90_duration-30",
            ],
        ),
    ],
)
def test_sweep_grammar_and_point_names(
    args: list[str], expected: list[str], tmp_path: Path, run_cli: RunCli
) -> None:
    # A training workload: nccl-tests' own window (NSG018) would refuse these delays.
    result = run_cli("-m", "workload=fsdp", *args, f"output_dir={tmp_path}")
    assert result.code == 0, result.err
    # One sweep root, named after what the points share (beside it, the shared verifier).
    (root,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert points(root) == expected
    index = json.loads((root / "nsysgen-sweep.json").read_text())
    assert sorted(p["name"] for p in index["points"]) == expected
    assert index["command"] == shlex.join(["nsysgen", "-m", "workload=fsdp", *args])


def test_paired_steps_reach_each_point(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli(
        "-m",
        "workload=fsdp",
        "capture=steps",
        "capture.first_step+capture.last_step=10:14,40:44",
        f"output_dir={tmp_path}",
    )
    assert result.code == 0, result.err
    root = tmp_path / "fsdp-p5-slurm"
    assert points(root) == ["first-step-10_last-step-14", "first-step-40_last-step-44"]
    sbatch = (root / "first-step-40_last-step-44" / "job.sbatch").read_text()
    assert "export NSYSGEN_PROFILE_FIRST_STEP=40\nexport NSYSGEN_PROFILE_LAST_STEP=44\n" in sbatch
    assert "#SBATCH --job-name=fsdp-p5-slurm-first-step-40-last-step-44\n" in sbatch
    wrapper = (root / "first-step-10_last-step-14" / "nsys-exec").read_text()
    # Each point records into its own report directory.
    assert "/fsx/nsight-reports/fsdp-p5-slurm-first-step-10-last-step-14/" in wrapper


def test_invalid_points_are_all_reported_and_nothing_is_written(
    tmp_path: Path, run_cli: RunCli
) -> None:
    result = run_cli(
        "-m",
        "workload=fsdp",
        "capture.ranks=[0],[20]",
        "capture.delay=10,7200",
        "capture.duration=60",
        f"output_dir={tmp_path}",
    )
    assert result.code == 2
    assert result.err.splitlines() == [
        "error: 3 of 4 sweep points are invalid; nothing was written",
        "point ranks-0_delay-7200:",
        "  capture.duration: [NSG003] the window ends 7260 s after launch (delay 7200 + duration "
        "60), "
        "after the job's time limit of 3600 s (job.time_limit_min=60) (allowed: delay + "
        "duration <= 3600)",
        "point ranks-20_delay-10:",
        "  capture.ranks[0]: rank 20 is outside the world size 16 (2 nodes x 8 GPUs) "
        "(allowed: 0..15)",
        "point ranks-20_delay-7200:",
        "  capture.duration: [NSG003] the window ends 7260 s after launch (delay 7200 + duration "
        "60), "
        "after the job's time limit of 3600 s (job.time_limit_min=60) (allowed: delay + "
        "duration <= 3600)",
        "  capture.ranks[0]: rank 20 is outside the world size 16 (2 nodes x 8 GPUs) "
        "(allowed: 0..15)",
    ]
    assert not any(tmp_path.iterdir())


def test_paired_sweep_with_missing_value_is_an_input_error(run_cli: RunCli) -> None:
    result = run_cli("-m", "capture.delay+capture.duration=30:60,90")
    assert result.code == 2
    assert result.err.splitlines()[0] == (
        "error: capture.delay+capture.duration=30:60,90: each point of a paired sweep needs 2 "
        "values joined by ':' (got '90'); e.g. capture.delay+capture.duration=V:V,..."
    )


@pytest.mark.slow
def test_rerun_with_fewer_points_removes_stale_points_and_check_follows(
    tmp_path: Path,
    run_cli: RunCli,
) -> None:
    assert run_cli("-m", "capture.delay=5,6,7", f"output_dir={tmp_path}").code == 0
    root = tmp_path / "nccl-p5-slurm"
    (root / "delay-7" / "slurm-1.out").write_text("log\n")
    assert run_cli("check", f"output_dir={tmp_path}").code == 0
    result = run_cli("-m", "capture.delay=5,6", f"output_dir={tmp_path}")
    assert result.code == 0
    assert points(root) == ["delay-5", "delay-6", "delay-7"]  # delay-7 keeps the foreign log
    assert sorted(p.name for p in (root / "delay-7").iterdir()) == ["slurm-1.out"]
    assert run_cli("check", f"output_dir={tmp_path}").code == 0
    # A point deleted by hand is missing; a stray point folder with a manifest is orphaned.
    (root / "delay-6" / "nsysgen-manifest.json").unlink()
    check = run_cli("check", f"output_dir={tmp_path}")
    assert check.code == 1
    hint = shlex.join(["nsysgen", "-m", "capture.delay=5,6", f"output_dir={tmp_path}"])
    assert f"{root / 'delay-6'}: missing (regenerate: {hint})" in check.out


@pytest.mark.slow
def test_sweep_bytes_do_not_depend_on_directory_user_or_hash_seed(tmp_path: Path) -> None:
    trees = []
    for index, (user, seed) in enumerate([("alice", "1"), ("bob", "999")]):
        cwd = tmp_path / f"run{index}" / "deeper"
        cwd.mkdir(parents=True)
        env = {**os.environ, "USER": user, "PYTHONHASHSEED": seed, "HOME": str(cwd)}
        result = run_nsysgen_process(
            "-m",
            "workload=fsdp",
            "cluster=p4de,p5",
            "capture.delay+capture.duration=30:60,90:30",
            cwd=cwd,
            env=env,
        )
        assert result.code == 0, result.err
        trees.append(tree_bytes(cwd / "generated"))
    assert trees[0] == trees[1]
    # 8 files per point (manifest included), the index, the one verifier above the points.
    assert len(trees[0]) == 4 * 8 + 2


@pytest.mark.slow
def test_long_sweep_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nsysgen",
            "-m",
            "cluster=local",
            "capture.delay=range(0,300)",
            "capture.duration=10,20",
            f"output_dir={tmp_path}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        cwd=tmp_path,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait() == 0
    text = b"".join(chunks).decode()
    # Progress starts once the sweep has run for a second, and ends at the last point.
    assert text.endswith("\rnsysgen: wrote 600/600 points\r\n"), text[-200:]
