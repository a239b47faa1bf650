"""The EKS job manifests (nsysgen/targets/eks/jobs.py), piece by piece: the container's env
(nsys's TMPDIR and the helper's PYTHONPATH kept with the user's own, secrets by reference, the
pod's name where reports go to the volume), volumes and mounts per injector and script place,
resources, the grace period per Trainer version, the injector label on the profiled replicas
only, and what a job of one's own gets added."""

from __future__ import annotations

import json
import re

import pytest

from nsysgen.targets.eks.jobs import (
    _env,
    _mounts,
    _resources,
    _volumes,
    fetch_pod_overrides,
    grace_seconds,
    profiling_env,
    profiling_volumes,
    pytorchjob,
    site_configmap,
    trainjob,
)
from tests.profile.configs import planned

EKS = ["experiment=fsdp-p5-eks"]  # TrainJob, operator-26, steps with the zero-patch helper
PYTORCHJOB = [*EKS, "target.job=pytorchjob", "target.injector=sidecar"]
THEIRS = [*EKS, "+cluster.env.PYTHONPATH=/mine", "+cluster.env.TMPDIR=/scratch",
          "target.termination_grace_period_s=45", "target.trainer_version='2.2'",
          "+target.extra_resources.fpga=1"]  # fmt: skip
DSHM = {"name": "dshm", "mountPath": "/dev/shm"}
SITE = {"name": "nsysgen-site", "mountPath": "/nsysgen-site", "readOnly": True}


def names(env: list[dict[str, object]]) -> dict[str, object]:
    return {str(e["name"]): e.get("value", e.get("valueFrom")) for e in env}


def test_the_env_adds_tmpdir_the_helper_and_secret_references() -> None:
    config, plan = planned(*EKS)
    env = names(_env(config, plan))
    assert (env["TMPDIR"], env["PYTHONPATH"]) == ("/nsys-tmp", "/nsysgen-site")
    assert env["NSYSGEN_PROFILE_FIRST_STEP"] == "10" and env["NSYSGEN_PROFILE_RANKS"] == "all"
    assert env["HF_TOKEN"] == {"secretKeyRef": {"name": "hf-token", "key": "token"}}
    assert "NSYSGEN_POD" not in env  # 26.x uploads: no folder per pod on a volume
    config, plan = planned(*EKS, "target.injector=operator-1")
    assert names(_env(config, plan))["NSYSGEN_POD"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def test_the_users_own_tmpdir_and_pythonpath_are_kept() -> None:
    config, plan = planned(*THEIRS)
    env = names(_env(config, plan))
    assert (env["TMPDIR"], env["PYTHONPATH"]) == ("/scratch", "/nsysgen-site:/mine")
    # A job of one's own sets its own TMPDIR and secrets; the helper's path is still added.
    added = names(profiling_env(config, plan))
    assert "TMPDIR" not in added and "HF_TOKEN" not in added
    assert added["PYTHONPATH"] == "/nsysgen-site:/mine" and added["NCCL_DEBUG"] == "INFO"


@pytest.mark.parametrize(
    ("overrides", "mounts", "volumes"),
    [
        (EKS, [DSHM, {"name": "nsys-tmp", "mountPath": "/nsys-tmp"}, SITE],
         ["nsys-tmp:emptyDir", "nsysgen-site:configMap"]),
        ([*EKS, "workload.fsdp.script=/fsx/t.py", "workload.fsdp.args=[]"],
         [DSHM, {"name": "nsys-tmp", "mountPath": "/nsys-tmp"},
          {"name": "shared-fs", "mountPath": "/fsx"}, SITE],
         ["nsys-tmp:emptyDir", "shared-fs:persistentVolumeClaim", "nsysgen-site:configMap"]),
        ([*EKS, "target.injector=operator-1"],
         [DSHM, {"name": "nsys-reports", "mountPath": "/fsx"},
          {"name": "nsys-tmp", "mountPath": "/nsys-tmp",
           "subPathExpr": "nsight-reports/fsdp-p5-eks/.nsysgen/$(NSYSGEN_POD)"}, SITE],
         ["nsys-reports:persistentVolumeClaim", "nsys-tmp:persistentVolumeClaim",
          "nsysgen-site:configMap"]),
    ],
    ids=["operator-26", "script-on-volume", "operator-1"],
)  # fmt: skip
def test_volumes_and_mounts(overrides: list[str], mounts: list[object], volumes: list[str]) -> None:
    config, plan = planned(*overrides)
    assert _mounts(config, plan) == mounts
    kinds = [f"{v['name']}:{next(k for k in v if k != 'name')}" for v in _volumes(config, plan)]
    assert kinds == ["dshm:emptyDir", *volumes]
    added, added_mounts = profiling_volumes(config, plan)
    assert "dshm" not in {v["name"] for v in added} | {m["name"] for m in added_mounts}
    assert "shared-fs" not in {v["name"] for v in added}  # the job's own


def test_resources_and_the_grace_period() -> None:
    config, plan = planned(*EKS)
    assert _resources(config) == {
        "requests": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32},
        "limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32},
    }
    assert grace_seconds(config, plan) == plan.teardown.write_s
    patch = trainjob(config, plan)["spec"]["runtimePatches"][0]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]
    assert pod["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == plan.teardown.write_s
    config, plan = planned(*THEIRS)
    assert _resources(config)["limits"]["fpga"] == 1
    assert grace_seconds(config, plan) == 45
    patch = trainjob(config, plan)["spec"]["runtimePatches"][0]
    assert "terminationGracePeriodSeconds" not in json.dumps(patch)  # Trainer 2.2 refuses it


def test_only_the_profiled_replicas_carry_the_injector_label() -> None:
    config, plan = planned(*PYTORCHJOB, "capture.ranks=[0]")
    specs = pytorchjob(config, plan)["spec"]["pytorchReplicaSpecs"]
    assert {kind: spec["template"]["metadata"]["labels"] for kind, spec in specs.items()} == {
        "Master": {"app": "fsdp-p5-eks", "nvidia-devtools-sidecar-injector": "enabled"},
        "Worker": {"app": "fsdp-p5-eks"},
    }
    assert (specs["Master"]["replicas"], specs["Worker"]["replicas"]) == (1, 1)
    config, plan = planned(*PYTORCHJOB, "cluster.nodes=1")
    assert list(pytorchjob(config, plan)["spec"]["pytorchReplicaSpecs"]) == ["Master"]


def test_the_helper_configmap_and_the_fetch_pod() -> None:
    config, _ = planned(*EKS)
    configmap = site_configmap()
    # Named by its content: a newer helper never replaces the one a running job mounts.
    assert re.fullmatch(r"nsysgen-site-[0-9a-f]{10}", configmap["metadata"]["name"])
    assert list(configmap["metadata"]) == ["name"]  # no namespace: apply-site.sh gives the job's
    assert sorted(configmap["data"]) == ["nsysgen_window.py", "sitecustomize.py"]
    for text in configmap["data"].values():
        compile(text, "configmap", "exec")
    pod = json.loads(fetch_pod_overrides(config))["spec"]
    assert pod["volumes"] == [
        {"name": "nsys-reports", "persistentVolumeClaim": {"claimName": "fsx-pvc"}}
    ]
    assert pod["containers"][0]["volumeMounts"] == [{"mountPath": "/fsx", "name": "nsys-reports"}]
