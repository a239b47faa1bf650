"""Every lint fires on a config that has its problem and stays quiet on its neighbour; `plan`
writes nothing and answers for a 1000-node cluster; golden plans for the experiments."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nsysgen.patching.step_args import StepLimit, step_limit
from nsysgen.profile.lints import all_lints
from nsysgen.targets import target_lints
from tests.conftest import EXPERIMENTS, REPO, RunCli

LOCAL = ["cluster=local", "workload=python"]
# lint -> (overrides that fire it, overrides right next to them that do not)
EKS = ["target=eks", "workload=fsdp", "workload.container_image=registry.example.com/fsdp:1"]
# A script in this repository that the step window can be put in (paths relative to REPO).
SOURCE = "tests/training_scripts/plain_loop.py"
STEPS = ["workload=fsdp", "capture=steps"]


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """`plan` unwrapped (one line per finding), for tests that search its text."""
    monkeypatch.setenv("COLUMNS", "1000")


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
    # workload.python.script is ${cluster.shared_fs}/train.py: not the source's file.
    "NSG015": (
        ["workload=python", "capture=steps", f"workload.python.source={SOURCE}"],
        [
            "workload=python",
            "capture=steps",
            f"workload.python.source={SOURCE}",
            f"workload.python.script=/fsx/nsysgen/{SOURCE}",
        ],
    ),
    # (last_step + 1) x 2.0 s: 4010 s > 3600 s; 1800 x 2.0 s = 3600 s fits.
    "NSG016": (
        [*STEPS, "capture.first_step=2000", "capture.last_step=2004"],
        [*STEPS, "capture.first_step=1795", "capture.last_step=1799"],
    ),
    # workload.fsdp.args holds --max_steps=100: steps 0..99.
    "NSG017": (
        [*STEPS, "capture.first_step=100", "capture.last_step=104"],
        [*STEPS, "capture.first_step=95", "capture.last_step=99"],
    ),
    # EKS pods run the image's script: a patch needs a rebuilt image, the zero-patch helper not.
    "NSG019": (
        [*EKS, "capture=steps", "capture.step_method=patch"],
        [*EKS, "capture=steps", "capture.step_method=hook"],
    ),
    # Trainer 2.2's runtimePatches have no terminationGracePeriodSeconds; 2.3's do.
    "NSG020": (
        [*EKS, "target.trainer_version=2.2"],
        [*EKS, "target.trainer_version=2.3"],
    ),
    # A script under a folder the pods mount over (nsys's TMPDIR) is not the image's; an
    # absolute path elsewhere outside cluster.shared_fs is.
    "NSG025": (
        [*EKS, "workload.fsdp.script=/nsys-tmp/fsdp/train.py"],
        [*EKS, "workload.fsdp.script=/workspace/fsdp/train.py"],
    ),
    # The CUDA hardware trace (nsys 2026.x on Blackwell) in a window that starts after launch;
    # the same capture on the default (auto: cuda-sw).
    "NSG021": (
        ["cluster=p6-b200", "nsight=2026.4.1", "capture.cuda_trace=hardware"],
        ["cluster=p6-b200", "nsight=2026.4.1"],
    ),
    # Advanced NCCL tracing needs an NCCL that nsysgen cannot see.
    "NSG022": (
        ["nsight=2026.4.1", "capture.nccl_trace=[default]"],
        ["nsight=2026.4.1"],
    ),
    # A 50-minute window of FSDP on every rank: reports of ~900 MB, a close pause of ~300 s,
    # half of torch's 600 s collective timeout; the default 60 s window: ~9 s.
    # One torchrun per node under nsys: a report holds all 8 ranks of its node.
    "NSG024": (
        ["workload=fsdp", "capture.ranks=[0,8]"],
        ["workload=fsdp", "capture.ranks=[0,1,2,3,4,5,6,7]"],
    ),
    # A 2-minute job may get Slurm's early signal at once, before the window opens at 30 s; a
    # 4-minute one cannot, whatever its report's size.
    "NSG026": (
        ["workload=fsdp", "capture.duration=0", "job.time_limit_min=2"],
        ["workload=fsdp", "capture.duration=0", "job.time_limit_min=4"],
    ),
    "NSG023": (
        ["workload=fsdp", "capture.duration=3000"],
        ["workload=fsdp"],
    ),
    # The default nccl-tests (8 B..2 GiB, 2 x p5) run ~8 s, ~11 s at half the bus bandwidth.
    "NSG018": (
        ["workload=nccl", "capture=window", "capture.delay=30"],
        ["workload=nccl", "capture=window", "capture.delay=5"],
    ),
}


def fired(run_cli: RunCli, overrides: list[str]) -> set[str]:
    result = run_cli("plan", "--json", *overrides)
    assert result.code in (0, 2), result.err
    return {lint["id"] for lint in json.loads(result.out)["lints"]}


def test_every_lint_has_a_case() -> None:
    assert sorted(CASES) == [lint.id for lint in all_lints(target_lints())]
    assert all(lint.fix and "\n" not in lint.fix for lint in all_lints(target_lints()))


@pytest.mark.parametrize("lint", sorted(CASES))
def test_lint_fires_and_its_neighbour_does_not(
    lint: str, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # workload.<kind>.source is relative to the working directory
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
        "warning: capture.ranks: [NSG006] 16 ranks record (in 16 reports), more than "
        "lints.max_profiled_ranks=4"
    )
    # A node's launcher records every rank of its node: 2 reports, 16 ranks, over the limit.
    node = run_cli("workload=fsdp", "capture.ranks=one_per_node", "lints.max_profiled_ranks=4",
                   f"output_dir={tmp_path / 'node'}")  # fmt: skip
    assert "[NSG006] 16 ranks record (in 2 reports)" in node.err
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
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # the width of plan's output when piped: one golden
    result = run_cli("plan", f"experiment={experiment}")
    assert result.code == 0, result.err
    golden = REPO / "tests" / "golden" / "plan" / f"{experiment}.txt"
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(result.out)
    assert result.out == golden.read_text(), "run `pytest --update-golden` and review"


def passed(run_cli: RunCli, *overrides: str) -> list[str]:
    result = run_cli("plan", *overrides)
    assert result.code == 0, result.err
    (line,) = [x for x in result.out.splitlines() if x.startswith("  passed: ")]
    return line.removeprefix("  passed: ").split(", ")


def test_plan_lists_only_the_lints_that_ran(run_cli: RunCli, wide: None) -> None:
    """A target's own lints run on that target only, and a lint switched off does not run."""
    slurm, eks = passed(run_cli), passed(run_cli, "experiment=fsdp-p5-eks")
    assert "NSG011" in slurm and "NSG014" not in slurm
    assert "NSG014" in eks and "NSG011" not in eks
    assert "NSG003" in slurm and "NSG003" not in passed(run_cli, "lints.severity.NSG003=off")


def test_calibration_is_what_the_fit_gives() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fit", REPO / "bench" / "calibration" / "fit.py")
    assert spec and spec.loader
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    model = fit.fit()
    errors = fit.errors(model)
    model["max_abs_error_percent"] = round(max(abs(e[3]) for e in errors), 1)
    stored = json.loads((REPO / "nsysgen" / "profile" / "calibration.json").read_text())
    assert model == stored
    assert len(errors) == 10 and stored["max_abs_error_percent"] < 25


def test_slowdown_lint_names_the_measured_remedies(run_cli: RunCli, wide: None) -> None:
    result = run_cli("plan", "workload=fsdp", "workload.estimate.kernels_per_second=20000")
    assert result.code == 0, result.err
    warning = next(line for line in result.out.splitlines() if "NSG012" in line)
    assert "what the measurements support: record fewer ranks (capture.ranks)" in warning
    assert "capture.extra_args=['--cuda-graph-trace=node']" in warning


HF_TRAINER = """\
import torch
from transformers import Trainer, TrainingArguments

trainer = Trainer(torch.nn.Linear(4, 4), TrainingArguments(output_dir="out"))
trainer.train()
"""


def test_the_step_limit_lint_numbers_a_library_loop_as_the_helper_does(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HF Trainer script: the helper numbers its steps by state.global_step + 1 (1..N), so
    --max_steps=104 runs steps 100..104 (a CPU run records them: tests/shipped)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "train.py").write_text(HF_TRAINER)
    setup = [
        *STEPS, "workload.fsdp.source=train/train.py",
        "workload.fsdp.script=${cluster.shared_fs}/my-repo/train/train.py",
        'workload.fsdp.args=["--max_steps=104"]', "capture.first_step=100",
    ]  # fmt: skip
    fits = run_cli(*setup, "capture.last_step=104")
    assert fits.code == 0 and "NSG017" not in fits.err, fits.err
    past = run_cli(*setup, "capture.last_step=105")
    assert past.code == 2
    assert (
        "(assumed: the Hugging Face Trainer numbers its steps from 1, as the helper reads it, as "
        "capture.*_step count them, so a run of 104 steps runs steps 1..104 and ends before step "
        "105) (allowed: capture.last_step <= 104, or a step limit of at least 105)"
    ) in past.err


def test_source_that_the_job_does_not_run_stops_the_compile(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen: the source was set, the script left at the packaged sample, which then ran.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train").mkdir()
    shutil.copy(REPO / SOURCE, tmp_path / "train" / "train.py")
    result = run_cli(*STEPS, "workload.fsdp.source=train/train.py")
    assert result.code == 2
    assert (
        "  workload.fsdp.script: [NSG015] workload.fsdp.source=train/train.py is the script "
        "nsysgen reads for the step window, but the job runs workload.fsdp.script=/fsx/"
        "awsome-distributed-training/3.test_cases/pytorch/FSDP/src/train.py, another file: the "
        "window would not be in the program that runs (allowed: a workload.fsdp.script that "
        "ends with /train/train.py) (its value comes from cluster.shared_fs)"
    ) in result.err.splitlines()
    assert not (tmp_path / "generated").exists()
    fixed = run_cli(
        *STEPS,
        "workload.fsdp.source=./train//train.py",
        "workload.fsdp.script=${cluster.shared_fs}/my-repo/train/train.py",
    )
    assert fixed.code == 0, fixed.err
    assert "NSG015" not in fixed.err


def test_source_lint_sees_the_config_composed_through_a_config_dir_experiment(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train").mkdir()
    shutil.copy(REPO / SOURCE, tmp_path / "train" / "train.py")
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "cluster").mkdir()
    (conf / "cluster" / "mine.yaml").write_text(
        (REPO / "conf" / "cluster" / "p5.yaml")
        .read_text()
        .replace("name: p5", "name: mine")
        .replace("shared_fs: /fsx", "shared_fs: /lustre")
    )

    def experiment(name: str, script: str) -> list[str]:
        (conf / "experiment" / f"{name}.yaml").write_text(
            "# @package _global_\ndefaults:\n  - override /cluster: mine\n"
            "  - override /workload: fsdp\n  - override /capture: steps\n"
            f"job:\n  name: {name}\nworkload:\n  fsdp:\n    source: train/train.py\n{script}"
        )
        return ["--config-dir", str(conf), f"experiment={name}"]

    # The script the experiment leaves at the packaged sample, under the user's shared_fs.
    wrong = run_cli("plan", "--json", *experiment("sample", ""))
    assert wrong.code == 2
    (finding,) = [f for f in json.loads(wrong.out)["lints"] if f["id"] == "NSG015"]
    assert finding["path"] == "workload.fsdp.script"
    assert "workload.fsdp.source=train/train.py" in finding["message"]
    assert (
        "workload.fsdp.script=/lustre/awsome-distributed-training/3.test_cases/pytorch/FSDP/src/"
        "train.py, another file"
    ) in finding["message"]
    compiled = run_cli(*experiment("sample", ""), f"output_dir={tmp_path / 'out'}")
    assert compiled.code == 2 and "workload.fsdp.script: [NSG015] " in compiled.err
    # The experiment points the script at the source's place on the cluster.
    script = "    script: ${cluster.shared_fs}/my-repo/train/train.py\n"
    right = run_cli(*experiment("mine", script), f"output_dir={tmp_path / 'out'}")
    assert right.code == 0, right.err
    assert not (tmp_path / "out" / "sample").exists()


def test_step_window_past_the_time_limit_stops_the_compile(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, wide: None
) -> None:
    monkeypatch.chdir(tmp_path)
    command = [*STEPS, "capture.first_step=2000", "capture.last_step=2004"]
    result = run_cli(*command)
    assert result.code == 2
    assert (
        "  capture.last_step: [NSG016] the step window ends about 4010 s after the training "
        "loop starts, after the job's time limit of 3600 s (job.time_limit_min=60) even before "
        "the job's startup is counted: training steps 2000..2004 (about 4000 s to 4010 s after "
        "the loop starts, at workload.estimate.step_seconds=2.0); the job is stopped before it "
        "records step 2004 (allowed: a window that ends by 3600 s)"
    ) in result.err.splitlines()
    assert not (tmp_path / "generated").exists()
    # The end the lint reads is the one `plan` shows.
    plan = run_cli("plan", *command)
    assert plan.code == 2
    assert "; ends at 4010 s; job time limit 3600 s" in plan.out
    longer = run_cli(*command, "job.time_limit_min=67", 'workload.fsdp.args=["--max_steps=3000"]')
    assert longer.code == 0, longer.err


def test_script_step_limit_below_the_window_stops_the_compile(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, wide: None
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(*STEPS, "capture.first_step=100", "capture.last_step=104")
    assert result.code == 2
    assert (
        "  workload.fsdp.args[9]: [NSG017] --max_steps=100 ends the run after 100 steps, but the "
        "window records steps 100..104 (capture.first_step..last_step): the window never opens "
        "(assumed: steps are numbered from 0, as capture.*_step count them, so a run of 100 "
        "steps runs steps 0..99 and ends before step 100) (allowed: capture.last_step <= 99, or "
        "a step limit of at least 105)"
    ) in result.err.splitlines()
    assert not (tmp_path / "generated").exists()
    cut = run_cli("plan", *STEPS, "capture.first_step=98", "capture.last_step=100")
    assert cut.code == 2 and "the window is cut short: step 100 never runs" in cut.out
    nemo = run_cli("plan", "workload=nemo", "capture=steps", "capture.last_step=100")
    assert nemo.code == 2
    assert "NSG017 workload.nemo.overrides[2]: trainer.max_steps=100 ends the run" in nemo.out
    # Megatron-LM and Megatron Bridge number their iterations from 1: 100 of them are 1..100.
    for kind, path in (("megatron", "args[7]"), ("bridge", "overrides[0]")):
        last = run_cli("plan", f"workload={kind}", "capture=steps", "capture.last_step=100")
        assert last.code == 0 and "NSG017" not in last.out.split("passed:")[0], last.out
        past = run_cli("plan", f"workload={kind}", "capture=steps", "capture.last_step=101")
        assert past.code == 2
        assert f"NSG017 workload.{kind}.{path}: " in past.out
        assert (
            f"(assumed: {kind} numbers its steps from 1, as capture.*_step count them, so a run "
            "of 100 steps runs steps 1..100 and ends before step 101) (allowed: "
            "capture.last_step <= 100, or a step limit of at least 101)"
        ) in past.out
    assert run_cli(*STEPS, "capture.first_step=95", "capture.last_step=99").code == 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--max_steps=100"], StepLimit(100, 0, "--max_steps=100")),
        (["--lr=1", "--max-steps", "100"], StepLimit(100, 2, "--max-steps 100")),
        (["--max_steps", "7", "--lr=1"], StepLimit(7, 1, "--max_steps 7")),
        (["--train_iters=5"], StepLimit(5, 0, "--train_iters=5")),
        (["--train-iters", "5"], StepLimit(5, 1, "--train-iters 5")),
        (["--num_steps=3"], StepLimit(3, 0, "--num_steps=3")),
        (["--steps", "3"], StepLimit(3, 1, "--steps 3")),
        (["--max_iters=3"], StepLimit(3, 0, "--max_iters=3")),
        (["--total_steps=3"], StepLimit(3, 0, "--total_steps=3")),
        (["trainer.max_steps=100"], StepLimit(100, 0, "trainer.max_steps=100")),
        (["++trainer.max_steps=9"], StepLimit(9, 0, "++trainer.max_steps=9")),
        (["a=1", "train.train_iters=50"], StepLimit(50, 1, "train.train_iters=50")),
        # argparse keeps the last value; -1 and 0 mean "no limit" to most scripts.
        (["--max_steps=10", "--max_steps=20"], StepLimit(20, 1, "--max_steps=20")),
        (["--max_steps=10", "--max_steps=-1"], None),
        (["--max_steps", "0"], None),
        (["trainer.max_steps=null"], None),
        (["trainer.max_steps=100", "~trainer.max_steps"], None),
        (["--max_steps"], None),
        (["--max_steps", "--lr=1"], None),
        (["--max_steps=1e3"], None),
        (["--", "--max_steps=10"], None),
        (["--steps_per_print=10", "model.nsys_profile.end_step=5", "max_steps=3"], None),
        ([], None),
    ],
)
def test_step_limit_reads_the_scripts_own_arguments(
    args: list[str], expected: StepLimit | None
) -> None:
    assert step_limit(args) == expected


def test_a_script_that_numbers_from_one_keeps_its_last_step(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, wide: None
) -> None:
    """A counter logged after its increment (the Hugging Face style) numbers steps 1..N."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hf.py").write_text(
        "import torch\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.AdamW(model.parameters())\n"
        "global_step = 0\nfor step, batch in enumerate(range(400)):\n    model(batch).backward()\n"
        "    if (step + 1) % 4 != 0:\n        continue\n    opt.step()\n    global_step += 1\n"
        "    print(global_step)\n"
    )
    base = ["plan", "workload=python", "capture=steps", "workload.python.source=hf.py"]
    base += ["workload.python.script=/fsx/hf.py", "workload.python.args=['--max_steps=100']"]
    assert run_cli(*base, "capture.first_step=96", "capture.last_step=100").code == 0
    past = run_cli(*base, "capture.first_step=96", "capture.last_step=101")
    assert past.code == 2
    assert "the script numbers its steps from 1 (global_step + 1)" in past.out
