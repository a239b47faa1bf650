"""A job of the user's own on EKS (nsysgen/targets/eks/own.py), from manifests in tmp_path: the
manifest read and refused by name (unreadable, not one job of the kind, a shape the patch cannot
address, a TrainJob of another size or command), and the JSON patch for a small PyTorchJob,
exactly: lists added where missing, PYTHONPATH put in front of the job's own behind a test op,
the job's longer grace period kept. tests/compile/test_eks_own.py applies patches with kubectl."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config, typed
from nsysgen.errors import Issue
from nsysgen.model import Config
from nsysgen.profile.environment import job_env
from nsysgen.targets.eks.checks import checks
from nsysgen.targets.eks.jobs import site_configmap
from nsysgen.targets.eks.own import (
    _env_ops,
    _escape,
    _labels,
    manifest_inputs,
    profile_patch,
    read_manifest,
)

BASE = ["target=eks", "workload=fsdp", "workload.container_image=r/f:1", "target.manifest=job.yaml",
        "job.name=tiny", "cluster.nodes=1", "cluster.efa_devices=0"]  # fmt: skip
PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: tiny}
spec:
  nprocPerNode: "8"
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          terminationGracePeriodSeconds: 600
          containers:
            - name: sidecar
            - name: pytorch
              command: [/usr/local/bin/torchrun]
              env: [{name: PYTHONPATH, value: /lib}]
"""
TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tiny}
spec:
  trainer: {numNodes: 2, numProcPerNode: 4, command: [bash, -c, torchrun train.py]}
"""
MASTER = "/spec/pytorchReplicaSpecs/Master/template"
SITE_NAME = site_configmap()["metadata"]["name"]  # the tree's one helper ConfigMap


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # target.manifest is relative to the working directory
    return tmp_path


def config_of(composer: Composer, *overrides: str) -> Config:
    return typed(composer.compose([*BASE, *overrides]).data)


def issues(composer: Composer, *overrides: str) -> list[Issue]:
    config = config_of(composer, *overrides)
    return list(checks(config, job_env(config)))


def test_the_patch_for_a_small_pytorchjob(composer: Composer, here: Path) -> None:
    (here / "job.yaml").write_text(PYTORCHJOB)
    overrides = ["target.job=pytorchjob", "capture=steps", "capture.step_method=hook"]
    config, plan, _ = build_config(composer.compose([*BASE, *overrides]), False)
    container = f"{MASTER}/spec/containers/1"  # the second: the injector profiles pytorch
    env: list[dict[str, Any]] = [
        {"op": "add", "path": f"{container}/env/-", "value": {"name": name, "value": value}}
        for name, value in (("NSYSGEN_PROFILE_FIRST_STEP", "10"), ("NSYSGEN_PROFILE_LAST_STEP",
                            "14"), ("NSYSGEN_PROFILE_RANKS", "all"), ("TMPDIR", "/nsys-tmp"))
    ]  # fmt: skip
    assert profile_patch(config, plan) == [
        {"op": "add", "path": f"{MASTER}/metadata",
         "value": {"labels": {"nvidia-nsight-profile": "enabled"}}},
        {"op": "add", "path": f"{MASTER}/spec/volumes",
         "value": [{"name": "nsys-tmp", "emptyDir": {}},
                   {"name": "nsysgen-site", "configMap": {"name": SITE_NAME}}]},
        {"op": "test", "path": f"{container}/name", "value": "pytorch"},
        {"op": "add", "path": f"{container}/volumeMounts",
         "value": [{"name": "nsys-tmp", "mountPath": "/nsys-tmp"},
                   {"name": "nsysgen-site", "mountPath": "/nsysgen-site", "readOnly": True}]},
        {"op": "test", "path": f"{container}/env/0/name", "value": "PYTHONPATH"},
        {"op": "replace", "path": f"{container}/env/0/value", "value": "/nsysgen-site:/lib"},
        *env,
    ]  # fmt: skip
    digest = hashlib.sha256(PYTORCHJOB.encode()).hexdigest()
    assert manifest_inputs(config) == {"job.yaml": digest}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read job.yaml (No such file or directory) (allowed: a YAML file"),
        ("a: [1\n", "cannot read job.yaml (while parsing a flow sequence) (allowed: a YAML file"),
        (PYTORCHJOB + "---\n" + PYTORCHJOB, "job.yaml holds 2 PyTorchJob objects (allowed: "
         "exactly one kubeflow.org/v1 PyTorchJob, as target.job=pytorchjob says)"),
        (PYTORCHJOB.replace("kubeflow.org/v1", "kubeflow.org/v2"), "job.yaml holds 1 PyTorchJob "
         "objects (allowed: exactly one kubeflow.org/v1 PyTorchJob"),
    ],
    ids=["missing", "not-yaml", "two-jobs", "other-api"],
)  # fmt: skip
def test_a_manifest_that_is_not_one_job_is_refused(
    composer: Composer, here: Path, text: str | None, message: str
) -> None:
    if text is not None:
        (here / "job.yaml").write_text(text)
    found = read_manifest(config_of(composer, "target.job=pytorchjob"))
    assert isinstance(found, Issue) and found.path == "target.manifest"
    assert found.message.startswith(message), found.message


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("numNodes: 2", "numNodes: two", "spec.trainer.numNodes is missing"),
        ("command: [bash, -c, torchrun train.py]", "command: bash", "spec.trainer.command is "
         "not a list"),
        ("train.py]}\n", "train.py]}\n  runtimePatches: {}\n",
         "spec.runtimePatches is not a list"),
        ("numNodes: 2,", "numNodes: 2, env: [{value: x}],", "spec.trainer.env is not a list of "
         "named items"),
    ],
)  # fmt: skip
def test_a_trainjob_the_patch_cannot_address_is_refused(
    composer: Composer, here: Path, old: str, new: str, problem: str
) -> None:
    assert TRAINJOB.count(old) == 1
    (here / "job.yaml").write_text(TRAINJOB.replace(old, new))
    assert issues(composer, "cluster.nodes=2") == [
        Issue("target.manifest", f"job.yaml: {problem} (allowed: a TrainJob as its CRD defines it)")
    ]


def test_a_trainjob_of_another_size_or_command_is_refused(composer: Composer, here: Path) -> None:
    (here / "job.yaml").write_text(TRAINJOB)
    found = issues(composer)
    assert [issue.path for issue in found] == [
        "cluster.nodes", "cluster.gpus_per_node", "target.manifest",
    ]  # fmt: skip
    assert found[0].message == (
        "1 nodes, but the job in job.yaml runs 2 pods (allowed: cluster.nodes=2)"
    )
    assert found[1].message.startswith("8 GPUs per node, but the job in job.yaml starts 4 ")
    assert found[2].message.startswith("job.yaml: trainer runs 'bash', but the injector's pattern")


def test_the_patch_helpers() -> None:
    assert _escape("a/b~c") == "a~1b~0c"  # RFC 6901
    assert _labels({}, "/t", {"a/b": "x"}) == [
        {"op": "add", "path": "/t/metadata", "value": {"labels": {"a/b": "x"}}}
    ]
    assert _labels({"metadata": {"labels": {"team": "llm"}}}, "/t", {"a/b": "x"}) == [
        {"op": "add", "path": "/t/metadata/labels/a~1b", "value": "x"}
    ]
    theirs = {"env": [{"name": "A", "value": "1"}, {"name": "PYTHONPATH", "valueFrom": {}}]}
    added = [{"name": "A", "value": "2"}, {"name": "PYTHONPATH", "value": "/s"}]
    assert _env_ops(theirs, "/c", added) == []  # theirs win; a reference is left alone
