"""What EKS names (nsysgen/targets/eks/names.py): report names as each injector writes them,
pod names of a TrainJob's JobSet and of a PyTorchJob with their length limits, which pods are
labelled and which record, where the pods find the training script, and where 26.x stores."""

from __future__ import annotations

import dataclasses

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config
from nsysgen.model import Config
from nsysgen.targets.eks.names import (
    DNS_1035,
    eks_settings,
    longest_pod_name,
    mounts_shared_fs,
    pod_selector,
    profiled_replicas,
    recording_nodes,
    report_name,
    report_output,
    script_place,
    shadowing_mount,
    state_pods,
    storage,
)

EKS = ["experiment=fsdp-p5-eks"]  # TrainJob, operator-26, steps 10..14, S3 storage, 2 nodes
PYTORCHJOB = [*EKS, "target.job=pytorchjob", "target.injector=sidecar"]
REPORTS = "/fsx/nsight-reports/fsdp-p5-eks/fsdp-p5-eks_python3_default_"


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def config_of(composer: Composer, *overrides: str) -> Config:
    config, _, _ = build_config(composer.compose(list(overrides)), stop_on_lint_errors=False)
    return config


def test_report_names_as_each_injector_writes_them(composer: Composer) -> None:
    operator_26 = config_of(composer, *EKS)
    assert report_output(operator_26) == (
        "s3://example-nsight-reports/<report_uuid>/<operator_named>"
    )
    assert report_name(operator_26, 1) == (
        "s3://example-nsight-reports/<report_uuid>/<tag>_python3_fsdp-p5-eks-node-0-1_<hash>"
    )
    operator_1 = config_of(composer, *EKS, "target.injector=operator-1")
    assert report_output(operator_1).endswith(
        "fsdp-p5-eks_{NVDT_PROCESS_NAME}_%{NVDT_POD_FULLNAME}_%{NVDT_CONTAINER_NAME}"
    )
    assert report_name(operator_1, 0) == REPORTS + "fsdp-p5-eks-node-0-0_pytorch"
    sidecar = config_of(composer, *PYTORCHJOB)
    assert report_name(sidecar, 1) == REPORTS + "fsdp-p5-eks-worker-0_pytorch_<ms>_<uid>"


def test_pod_names_and_their_limits(composer: Composer) -> None:
    trainjob = config_of(composer, *EKS)
    assert longest_pod_name(trainjob) == ("fsdp-p5-eks-node-0-1-", 58)  # JobSet adds a suffix
    assert state_pods(trainjob) == ["fsdp-p5-eks-node-0-0", "fsdp-p5-eks-node-0-{node}"]
    pytorchjob = config_of(composer, *PYTORCHJOB)
    assert longest_pod_name(pytorchjob) == ("fsdp-p5-eks-worker-0", 63)
    assert state_pods(pytorchjob) == ["fsdp-p5-eks-master-0", "fsdp-p5-eks-worker-{worker}"]
    assert DNS_1035.match("fsdp-p5-eks-worker-0") and not DNS_1035.match("0-starts-with-digit")


@pytest.mark.parametrize(
    ("overrides", "labelled", "recording"),
    [
        (EKS, ("node",), [0, 1]),
        ([*EKS, "capture.ranks=[8]"], ("node",), [1]),  # the step window opens on node 1 only
        ([*EKS, "capture=window", "~capture.first_step", "~capture.last_step"], ("node",),
         [0, 1]),  # a window opens in every labelled pod
        ([*PYTORCHJOB, "capture.ranks=[0]"], ("Master",), [0]),
        ([*PYTORCHJOB, "capture.ranks=[0,9]"], ("Master", "Worker"), [0, 1]),
        ([*PYTORCHJOB, "cluster.nodes=1"], ("Master",), [0]),
    ],
    ids=["trainjob", "trainjob-rank-8", "trainjob-window", "master", "every-node", "one-node"],
)  # fmt: skip
def test_labelled_and_recording_pods(
    composer: Composer, overrides: list[str], labelled: tuple[str, ...], recording: list[int]
) -> None:
    config = config_of(composer, *overrides)
    assert profiled_replicas(config) == labelled
    assert recording_nodes(config) == recording


@pytest.mark.parametrize(
    ("script", "place", "shadow", "mounts"),
    [
        ("/fsdp/train.py", "image", None, False),
        ("/fsx/train.py", "volume", None, True),
        ("/dev/shm/x.py", "unknown", "/dev/shm", False),
        ("/fsxy/train.py", "image", None, False),  # not under /fsx: a prefix is no folder
    ],
)
def test_where_the_pods_find_the_script(
    composer: Composer, script: str, place: str, shadow: str | None, mounts: bool
) -> None:
    config = config_of(composer, *EKS, f"workload.fsdp.script={script}", "workload.fsdp.args=[]")
    assert (script_place(config), shadowing_mount(config), mounts_shared_fs(config)) == (
        place, shadow, mounts,
    )  # fmt: skip


def test_storage_and_the_selector_of_a_job_of_ones_own(composer: Composer) -> None:
    config = config_of(composer, *EKS)
    assert storage(config) == "s3://example-nsight-reports"
    assert storage(config_of(composer, *EKS, "~capture.s3_uri")) == "minio://nsight-reports"
    assert pod_selector(config) == "app=fsdp-p5-eks"
    settings = dataclasses.replace(eks_settings(config), manifest="job.yaml")
    own = dataclasses.replace(config, target=dataclasses.replace(config.target, settings=settings))
    assert pod_selector(own) == "jobset.sigs.k8s.io/jobset-name=fsdp-p5-eks"
    settings = dataclasses.replace(settings, job="pytorchjob")
    own = dataclasses.replace(config, target=dataclasses.replace(config.target, settings=settings))
    assert pod_selector(own) == "training.kubeflow.org/job-name=fsdp-p5-eks"
