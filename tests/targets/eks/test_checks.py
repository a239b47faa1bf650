"""The rules only EKS has (nsysgen/targets/eks/checks.py), called on typed configs: each one
fires with its message on the key to change, the neighbouring valid config passes, and a
workload that is no torchrun job stops the checks at once. tests/profile/test_lints.py covers
the EKS lints; tests/targets/test_eks.py the guide's mistakes through the CLI."""

from __future__ import annotations

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config, typed
from nsysgen.errors import Issue
from nsysgen.profile.environment import job_env
from nsysgen.profile.lints import run_lints
from nsysgen.targets.eks import TARGET
from nsysgen.targets.eks.checks import checks, job_kind

EKS = ["experiment=fsdp-p5-eks"]  # TrainJob, operator-26, steps: valid
VOLUME = [*EKS, "target.injector=operator-1"]  # reports on the shared volume
SPLIT = (
    "the injector passes nsys arguments as one string split on spaces (allowed: a value without "
    "spaces, quotes or shell syntax $ ` ; & | < > ( ) [ ] * ? ! # \\)"
)


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def issues(composer: Composer, *overrides: str) -> list[Issue]:
    config = typed(composer.compose([*EKS, *overrides]).data)
    return list(checks(config, job_env(config)))


def test_the_experiment_passes_and_is_a_trainjob(composer: Composer) -> None:
    assert issues(composer) == []
    assert job_kind(typed(composer.compose(EKS).data)) == "TrainJob"


def test_a_workload_without_torchrun_stops_the_checks(composer: Composer) -> None:
    assert issues(composer, "workload=nccl", "job.name=Bad") == [
        Issue(
            "workload.kind",
            "target eks runs PyTorch jobs with one torchrun per pod; 'nccl' is not one "
            "(allowed: workload=fsdp)",
        )
    ]


def test_values_the_injector_would_split_are_refused(composer: Composer) -> None:
    assert issues(composer, 'capture.extra_args=["--x=a b"]', "capture.report_name='r;x'") == [
        Issue("capture.extra_args[0]", f"'--x=a b': {SPLIT}"),
        Issue("capture.report_name", f"'r;x': {SPLIT}"),
    ]


@pytest.mark.parametrize(
    ("overrides", "path", "start"),
    [
        (["capture.report_dir=/other/r"], "capture.report_dir",
         "'/other/r' is not a folder inside the shared volume mounted at '/fsx'"),
        (["capture.report_dir=/fsx/r%p"], "capture.report_dir",
         "'/fsx/r%p' holds '%': the pods' mounts create the report folder by its literal name"),
        (["+cluster.env.NSYSGEN_POD=x"], "cluster.env.NSYSGEN_POD",
         "NSYSGEN_POD is nsysgen's own (the pod's name, for its TMPDIR folder on the volume)"),
        (["job.name=a-job-name-that-is-long-enough-to-overflow-fifty-eight"], "job.name",
         "'a-job-name-that-is-long-enough-to-overflow-fifty-eight' makes pod names such as "
         "'a-job-name-that-is-long-enough-to-overflow-fifty-eight-node-0-1-' (64 characters), "
         "which Kubernetes cuts at 58"),
    ],
    ids=["outside-volume", "placeholder", "pod-variable", "long-pod-name"],
)  # fmt: skip
def test_reports_on_the_shared_volume_need_a_plain_folder_on_it(
    composer: Composer, overrides: list[str], path: str, start: str
) -> None:
    (issue,) = issues(composer, "target.injector=operator-1", *overrides)
    assert issue.path == path and issue.message.startswith(start), issue
    # 26.x uploads its reports: the same folder is no problem there.
    if path == "capture.report_dir":
        assert issues(composer, *overrides) == []


@pytest.mark.parametrize(
    ("overrides", "path", "start"),
    [
        (["target.runtime_job=a-very-long-runtime-job-name"], "target.runtime_job",
         "'a-very-long-runtime-job-name' has 28 characters; Kubeflow Trainer 2.4 limits"),
        (["target.coordinator=true"], "target.coordinator",
         "capture=steps: the program opens the window itself, which Coordinator Mode"),
        (["cluster=p6-b200"], "nsight.version",
         "Nsight Operator 26.x runs its own nsys 2026.x, which traces CUDA in hardware on "
         "B200-180GB"),
        (["job.name=Fsdp"], "job.name", "'Fsdp' is not a TrainJob name"),
        (["workload.container_image=null"], "workload.container_image",
         "target eks needs the image your trainer pods run"),
    ],
    ids=["runtime-job-name", "coordinator", "blackwell", "dns-name", "no-image"],
)  # fmt: skip
def test_trainer_and_operator_rules(
    composer: Composer, overrides: list[str], path: str, start: str
) -> None:
    (issue,) = issues(composer, *overrides)
    assert issue.path == path and issue.message.startswith(start), issue


def test_neighbours_of_the_rules_pass(composer: Composer) -> None:
    assert issues(composer, "target.injector=operator-1") == []
    assert issues(composer, "target.runtime_job=a-runtime-job-of-20") == []
    assert issues(composer, "target.runtime_job=a-very-long-runtime-job-name",
                  "target.trainer_version='2.3'") == []  # fmt: skip
    assert issues(composer, "cluster=p6-b200", "nsight=2026.4.1") == []
    assert issues(composer, "target.job=pytorchjob", "target.injector=sidecar",
                  "capture.ranks=[0,1]") == []  # fmt: skip


def test_trainer_2_2_warns_that_a_configured_grace_period_cannot_reach_the_pods(
    composer: Composer,
) -> None:
    overrides = [*EKS, "target.trainer_version='2.2'", "target.termination_grace_period_s=90"]
    config, plan, _ = build_config(composer.compose(overrides), stop_on_lint_errors=False)
    (finding,) = [f for f in run_lints(config, plan, TARGET.lints) if f.lint == "NSG020"]
    assert finding.path == "target.trainer_version"
    assert "(target.termination_grace_period_s=90 cannot reach them)" in finding.message
