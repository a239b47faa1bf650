"""Golden files: every experiment compiles to exactly what generated/ holds, byte for byte, and a
few more cases to exactly what tests/golden/ holds. Regenerate with `pytest --update-golden`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scripts.golden_sources import CASES
from tests.conftest import EXPERIMENTS, REPO, RunCli, compare_trees


def _check(
    tmp_path: Path,
    run_cli: RunCli,
    overrides: list[str],
    golden: Path,
    folder: str,
    update: bool,
) -> None:
    result = run_cli(*overrides, f"output_dir={tmp_path}")
    assert result.code == 0, result.err
    actual = tmp_path / folder
    if update:
        shutil.rmtree(golden, ignore_errors=True)
        shutil.copytree(actual, golden)
        return
    compare_trees(actual, golden, "run `pytest --update-golden` and review the diff")


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_matches_generated(
    experiment: str,
    tmp_path: Path,
    run_cli: RunCli,
    request: pytest.FixtureRequest,
) -> None:
    update = bool(request.config.getoption("--update-golden"))
    _check(
        tmp_path,
        run_cli,
        [f"experiment={experiment}"],
        REPO / "generated" / experiment,
        experiment,
        update,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_golden(
    case: str,
    tmp_path: Path,
    run_cli: RunCli,
    request: pytest.FixtureRequest,
) -> None:
    update = bool(request.config.getoption("--update-golden"))
    golden = REPO / "tests" / "golden" / case
    _check(tmp_path, run_cli, CASES[case], golden / "out", "", update)


@pytest.mark.parametrize(("nodes", "ranks"), [(2, "[0]"), (4, "one_per_node"), (1, "all")])
def test_analyze_sbatch_passes_the_jobs_world_size(
    tmp_path: Path, run_cli: RunCli, nodes: int, ranks: str
) -> None:
    """Bus bandwidth's factor is the job's world size, not the count of ranks recorded (rank 0
    of 16 alone halved the guide's all-reduce bandwidth)."""
    result = run_cli(
        "workload=nccl", "cluster=p4de", f"cluster.nodes={nodes}", f"capture.ranks={ranks}",
        "job.name=w", f"output_dir={tmp_path}",
    )  # fmt: skip
    assert result.code == 0, result.err
    script = (tmp_path / "w" / "analyze.sbatch").read_text()
    assert (
        f'--scheduler-file "$scheduler_file" --world-size {nodes * 8} \\\n'
        '  --cluster "$job_dir/nsysgen-expect.json" "${log_args[@]}"\n'
    ) in script
    # nccl-tests' own figures: from the profiled job's log, whose path job.sbatch records.
    assert 'log=$(cat -- "$run_dir/.nsysgen/stdout"' in script
    assert "StdOut=" in (tmp_path / "w" / "job.sbatch").read_text()
