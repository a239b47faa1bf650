"""The command line: help, defaults, overrides, user config dirs, error paths, determinism."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli, run_nsysgen_process, tree_bytes


def test_help_lists_groups_and_options(run_cli: RunCli) -> None:
    result = run_cli("--help")
    assert result.code == 0
    assert max(len(line) for line in result.out.splitlines()) <= 80
    text = re.sub(r"\n {14}(?=\S)", " ", result.out)  # a group's options go on under it
    lines = {line.split(":")[0].strip(): line for line in text.splitlines() if ":" in line}
    assert lines["cluster"].endswith("local, p4d, p4de, p5*, p5e, p5en, p6-b200")
    assert lines["workload"].endswith("bridge, command, fsdp, megatron, nccl*, nemo, python")
    assert lines["capture"].endswith("nvtx, steps, window*")
    assert lines["target"].endswith("eks, slurm*")
    assert lines["nsight"].endswith("2023.4.4, 2024.4.1, 2025.3.1*, 2025.6.1, 2026.4.1")
    assert lines["experiment"].endswith(
        "bridge-p5, fsdp-p4de, fsdp-p4de-eks, fsdp-p5-eks, megatron-p5, nccl-allreduce-p4de, "
        "nccl-scatter-p4de, nemo-p5"
    )


@pytest.mark.slow
def test_no_arguments_compiles_default_and_leaves_no_hydra_debris(tmp_path: Path) -> None:
    result = run_nsysgen_process(cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.out == (
        "a run records: 1 report x 1 rank = 1 rank: 1 per node on 1 node; "
        "capture.ranks=[0] names 1\n"
        "generated/nccl-p5-slurm: 7 files (7 created)\n"
    )
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert files == [
        "generated",
        "generated/nccl-p5-slurm",
        "generated/nccl-p5-slurm/README.md",
        "generated/nccl-p5-slurm/analyze.sbatch",
        "generated/nccl-p5-slurm/install-nsight.sh",
        "generated/nccl-p5-slurm/job.sbatch",
        "generated/nccl-p5-slurm/nsys-exec",
        "generated/nccl-p5-slurm/nsysgen-expect.json",
        "generated/nccl-p5-slurm/nsysgen-manifest.json",
        "generated/nccl-p5-slurm/recipes.sh",
        "generated/nsysgen-verify.py",
    ]
    again = run_nsysgen_process(cwd=tmp_path)
    assert again.out.splitlines()[-1] == "generated/nccl-p5-slurm: 7 files (unchanged)"


def test_overrides_reach_the_artifacts(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli(
        "target=slurm",
        "workload=nccl",
        "cluster=p4de",
        "capture=window",
        "capture.delay=5",
        "capture.duration=60",
        f"output_dir={tmp_path}",
    )
    assert result.code == 0, result.err
    wrapper = (tmp_path / "nccl-p4de-slurm" / "nsys-exec").read_text()
    assert "  --delay=5 \\\n  --duration=60 \\\n  --kill=none \\\n" in wrapper


def test_unknown_group_option_lists_available_options(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("cluster=p9", f"output_dir={tmp_path}")
    assert result.code == 2
    assert result.err == (
        "error: cluster=p9: no option 'p9' in group cluster "
        "(allowed: local, p4d, p4de, p5, p5e, p5en, p6-b200)\n"
    )
    assert "Config search path" not in result.err and "Traceback" not in result.err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["capture.delay=30,60"], "error: capture.delay=30,60: a sweep needs -m (--multirun)"),
        (
            ["capture.delay=[1"],
            "error: capture.delay=[1: not a valid override (no viable "
            "alternative at input '[1'); the grammar is group=option or key=value (Hydra override "
            "grammar)",
        ),
        (["--bogus"], "error: compile does not take --bogus"),
        (["--config-dir"], "error: --config-dir needs a directory"),
        (
            ["--config-dir", "/nonexistent/x"],
            "error: --config-dir /nonexistent/x: no such directory",
        ),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str, run_cli: RunCli) -> None:
    result = run_cli(*args)
    assert result.code == 2
    assert result.err.splitlines()[0] == message
    assert "Traceback" not in result.err


def test_user_config_dir_replaces_packaged_option(tmp_path: Path, run_cli: RunCli) -> None:
    user = tmp_path / "my-conf" / "cluster"
    user.mkdir(parents=True)
    packaged = (REPO / "conf" / "cluster" / "p5.yaml").read_text()
    (user / "p5.yaml").write_text(packaged.replace("nodes: 2", "nodes: 4"))
    (user / "mine.yaml").write_text(packaged.replace("name: p5", "name: mine"))
    out = tmp_path / "out"
    assert (
        run_cli("--config-dir", str(tmp_path / "my-conf"), "cluster=p5", f"output_dir={out}").code
        == 0
    )
    assert "#SBATCH --nodes=4\n" in (out / "nccl-p5-slurm" / "job.sbatch").read_text()
    assert (
        run_cli(f"--config-dir={tmp_path / 'my-conf'}", "cluster=mine", f"output_dir={out}").code
        == 0
    )
    assert (out / "nccl-mine-slurm" / "job.sbatch").is_file()
    # Without the user directory the packaged p5 (2 nodes) is back.
    assert run_cli("cluster=p5", f"output_dir={out}", "job.name=plain").code == 0
    assert "#SBATCH --nodes=2\n" in (out / "plain" / "job.sbatch").read_text()


def test_internal_error_exits_3_and_says_it_is_a_bug(
    monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    import nsysgen.drivers.build

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(nsysgen.drivers.build, "compile_config", broken)
    result = run_cli()
    assert result.code == 3
    assert "internal error (RuntimeError: boom). This is a bug in nsysgen" in result.err


@pytest.mark.slow
def test_output_is_identical_across_directories_users_and_hash_seeds(tmp_path: Path) -> None:
    trees = []
    for index, (user, seed) in enumerate([("alice", "0"), ("bob", "12345"), ("carol", "random")]):
        cwd = tmp_path / f"wd{index}" / "nested"
        cwd.mkdir(parents=True)
        env = {
            **os.environ,
            "USER": user,
            "LOGNAME": user,
            "PYTHONHASHSEED": seed,
            "HOME": str(cwd),
        }
        for experiment in ("fsdp-p4de", "nemo-p5", "fsdp-p4de-eks"):
            result = run_nsysgen_process(f"experiment={experiment}", cwd=cwd, env=env)
            assert result.code == 0, result.err
        trees.append(tree_bytes(cwd / "generated"))
    assert trees[0] == trees[1] == trees[2]
    text = b"".join(content for content, _ in trees[0].values())
    for leak in (
        b"alice",
        str(tmp_path).encode(),
        os.uname().nodename.encode(),
        sys.prefix.encode(),
    ):
        assert leak not in text


def test_wrapper_runs_unselected_ranks_without_nsys_and_stops_clearly_without_nsys(
    tmp_path: Path,
    run_cli: RunCli,
) -> None:
    import subprocess

    assert (
        run_cli(
            "capture.ranks=[0,9]", f"output_dir={tmp_path}", "cluster.nsight_root=/nonexistent"
        ).code
        == 0
    )
    wrapper = tmp_path / "nccl-p5-slurm" / "nsys-exec"
    marker = tmp_path / "ran"

    def task(rank: int) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ["PATH"],
            "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank % 8),
            "SLURMD_NODENAME": f"node{rank // 8 + 1}",
        }
        return subprocess.run(
            [str(wrapper), "touch", str(marker)], env=env, capture_output=True, text=True
        )

    for rank in (1, 8, 15):  # not selected: the program itself runs
        marker.unlink(missing_ok=True)
        proc = task(rank)
        assert proc.returncode == 0 and marker.exists(), proc.stderr
    for rank in (0, 9):  # selected: nsys is required and missing
        marker.unlink(missing_ok=True)
        proc = task(rank)
        assert proc.returncode == 127 and not marker.exists()
        assert proc.stderr == (
            f"nsys-exec: task {rank} on node{rank // 8 + 1}: no nsys at "
            "/nonexistent/target-linux-x64/nsys (run install-nsight.sh first)\n"
        )
    proc = subprocess.run(
        [str(wrapper), "true"], env={"PATH": os.environ["PATH"]}, capture_output=True, text=True
    )
    assert proc.returncode != 0
    assert "SLURM_PROCID is not set; start this wrapper with srun" in proc.stderr


def test_the_cli_is_split_by_job_into_small_modules() -> None:
    """One module per job (parse, help, compile, plan, check/regenerate, dispatch), none over
    400 lines; `nsysgen.cli:main` stays the entry point."""
    from nsysgen import cli

    folder = REPO / "nsysgen" / "cli"
    sizes = {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.py")}
    assert set(sizes) >= {"__init__.py", "args.py", "help.py", "compile.py", "plan.py"}
    assert max(sizes.values()) <= 400, sizes
    assert not (REPO / "nsysgen" / "cli.py").exists()
    assert callable(cli.main)
