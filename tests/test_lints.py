"""Every lint fires on a config that has its problem and stays quiet on its neighbour; `plan`
writes nothing and answers for a 1000-node cluster; golden plans for the experiments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsysgen.lints import all_lints
from tests.conftest import EXPERIMENTS, REPO, RunCli

LOCAL = ["cluster=local", "workload=python"]
# lint -> (overrides that fire it, overrides right next to them that do not)
EKS = ["target=eks", "workload=fsdp", "workload.container_image=registry.example.com/fsdp:1"]
CASES = {
    "NSG001": (
        ["capture.ranks=all", 'capture.extra_args=["--gpu-metrics-devices=all"]'],
        ["capture.ranks=one_per_node", 'capture.extra_args=["--gpu-metrics-devices=all"]'],
    ),
    "NSG002": (
        ['capture.report_name="r_%q{SLURM_NODEID}"', "capture.ranks=[0,1]"],
        ['capture.report_name="r_%q{SLURM_NODEID}_%q{SLURM_PROCID}"', "capture.ranks=[0,1]"],
    ),
    "NSG003": (
        ["capture.delay=3000", "capture.duration=700"],
        ["capture.delay=3000", "capture.duration=600"],
    ),
    "NSG004": (
        ["workload=fsdp", "capture=steps", 'capture.extra_args=["--duration=60"]'],
        ["workload=fsdp", "capture=steps", 'capture.extra_args=["--duration=60","--kill=none"]'],
    ),
    "NSG005": (
        [
            "workload=fsdp",
            "capture=steps",
            'capture.extra_args=["--capture-range-end=stop-shutdown"]',
        ],
        ["workload=fsdp", "capture=steps", 'capture.extra_args=["--capture-range-end=repeat:2"]'],
    ),
    "NSG006": (
        ["capture.ranks=all", "lints.max_profiled_ranks=15"],
        ["capture.ranks=all", "lints.max_profiled_ranks=16"],
    ),
    "NSG007": (["capture.report_dir=/scratch/reports"], ["capture.report_dir=/fsx/scratch"]),
    "NSG008": (["+cluster.env.TMPDIR=/tmp/nsys"], ["+cluster.env.TMPDIR=/fsx/tmp"]),
    "NSG009": (
        ['capture.report_name="r_%q{SLURM_PROCID}_%q{HOSTNAME}"'],
        ['capture.report_name="r_%q{SLURM_PROCID}_%q{SLURMD_NODENAME}"'],
    ),
    "NSG010": (["+cluster.env.API_TOKEN=abc"], ["+cluster.env.API_HOST=abc"]),
    "NSG011": (
        ["cluster.slurm.platform=hyperpod"],
        ["cluster.slurm.platform=hyperpod", "cluster.slurm.gres=false", "cluster.slurm.mpi=null"],
    ),
    # 20,000 launches/s x 1.93 us = 3.9 % > 2 %; 10,000 launches/s = 1.9 %.
    "NSG012": (
        ["workload=fsdp", "workload.estimate.kernels_per_second=20000"],
        ["workload=fsdp", "workload.estimate.kernels_per_second=10000"],
    ),
    "NSG013": (
        ["capture=window", "capture.delay=3500", "capture.duration=60"],
        ["capture=window", "capture.delay=3400", "capture.duration=60"],
    ),
    "NSG014": (
        [*EKS, "capture=steps", "capture.ranks=[0]"],
        [*EKS, "capture=steps", "capture.ranks=[0,8]"],
    ),
}


def fired(run_cli: RunCli, overrides: list[str]) -> set[str]:
    result = run_cli("plan", "--json", *overrides)
    assert result.code in (0, 2), result.err
    return {lint["id"] for lint in json.loads(result.out)["lints"]}


def test_every_lint_has_a_case() -> None:
    assert sorted(CASES) == [lint.id for lint in all_lints()]
    assert all(lint.fix and "\n" not in lint.fix for lint in all_lints())


@pytest.mark.parametrize("lint", sorted(CASES))
def test_lint_fires_and_its_neighbour_does_not(lint: str, run_cli: RunCli) -> None:
    firing, quiet = CASES[lint]
    assert lint in fired(run_cli, firing)
    assert lint not in fired(run_cli, quiet)


def test_error_lints_stop_the_compile_and_warnings_print(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "out"
    error = run_cli("capture.report_dir=/scratch/r", f"output_dir={out}")
    assert error.code == 2 and "capture.report_dir: [NSG007] " in error.err
    assert not out.exists()
    warning = run_cli("capture.ranks=all", "lints.max_profiled_ranks=4", f"output_dir={out}")
    assert warning.code == 0
    assert warning.err.splitlines()[0].startswith(
        "warning: capture.ranks: [NSG006] 16 tasks record, more than lints.max_profiled_ranks=4"
    )
    strict = run_cli(
        "capture.ranks=all",
        "lints.max_profiled_ranks=4",
        "+lints.severity.NSG006=error",
        f"output_dir={tmp_path / 'strict'}",
    )
    assert strict.code == 2 and "[NSG006]" in strict.err
    silenced = run_cli(
        "capture.report_dir=/scratch/r",
        "+lints.severity.NSG007=off",
        f"output_dir={tmp_path / 'off'}",
    )
    assert silenced.code == 0


def test_plan_writes_nothing_and_answers_for_a_thousand_nodes(
    tmp_path: Path,
    run_cli: RunCli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(
        "plan",
        "--json",
        "cluster=p5",
        "cluster.nodes=1000",
        "capture.ranks=all",
        "cluster.env.TMPDIR=/fsx/tmp",
        "lints.max_profiled_ranks=8000",
    )
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    assert plan["world_size"] == 8000 and plan["recorded_count"] == 8000
    assert plan["recorded_tasks"] == "ranks 0-7999" and plan["reports_per"] == "one report per rank"
    # Names are spelled out on request only.
    assert len(plan["recording"]) == 8
    assert plan["report_names_unique"] is True
    assert plan["collector_count"] == 0 and plan["collector_tasks"] == []
    assert plan["total_bytes"] == plan["reports"] * plan["bytes_per_report"]
    assert list(tmp_path.iterdir()) == []


def test_plan_shows_collectors_one_per_node_and_node_reports(run_cli: RunCli) -> None:
    plan = json.loads(run_cli("plan", "--json", "experiment=nccl-scatter-p4de").out)
    assert plan["collector_tasks"] == [0, 8] and plan["collector_count"] == 2
    assert plan["recorded_count"] == 16 and plan["recorded_tasks"] == "ranks 0-15"
    every = json.loads(
        run_cli("plan", "--json", "--expand", "16", "experiment=nccl-scatter-p4de").out
    )
    collectors = [r for r in every["recording"] if r["collectors"]]
    assert [(r["task"], r["node"]) for r in collectors] == [(0, 0), (8, 1)]
    node = json.loads(run_cli("plan", "--json", "experiment=fsdp-p4de").out)
    assert [r["report"].rsplit("/", 1)[1] for r in node["recording"]] == [
        "fsdp-p4de_job<jobid>_node0_<host0>_allgpus"
    ]
    assert "one torchrun per node" in node["launch"]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_plan_of_experiment_matches_golden(
    experiment: str,
    run_cli: RunCli,
    request: pytest.FixtureRequest,
) -> None:
    result = run_cli("plan", f"experiment={experiment}")
    assert result.code == 0, result.err
    golden = REPO / "tests" / "golden" / "plan" / f"{experiment}.txt"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.out)
    assert result.out == golden.read_text(), "run `pytest --update-golden` and review"


def test_calibration_is_what_the_fit_gives() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fit", REPO / "bench" / "calibration" / "fit.py")
    assert spec and spec.loader
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    model = fit.fit()
    errors = fit.errors(model)
    model["max_abs_error_percent"] = round(max(abs(e[3]) for e in errors), 1)
    stored = json.loads((REPO / "nsysgen" / "calibration.json").read_text())
    assert model == stored
    assert len(errors) == 10 and stored["max_abs_error_percent"] < 25


def test_slowdown_lint_names_the_measured_remedies(run_cli: RunCli) -> None:
    result = run_cli("plan", "workload=fsdp", "workload.estimate.kernels_per_second=20000")
    assert result.code == 0, result.err
    warning = next(line for line in result.out.splitlines() if "NSG012" in line)
    assert "what the measurements support: record fewer ranks (capture.ranks)" in warning
    assert "capture.extra_args=['--cuda-graph-trace=node']" in warning
