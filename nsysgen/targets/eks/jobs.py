"""The job manifests: a PyTorchJob or a TrainJob, and the zero-patch helper's ConfigMap."""

from __future__ import annotations

import hashlib
import json
import posixpath
from functools import cache
from typing import Any

from nsysgen.model import Config
from nsysgen.output.render import header, render_template
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.shipped import HELPER_DIR, STEP_WINDOW_FILE, source_text
from nsysgen.shipped.step_window.names import HELPER_LOG as HELPER_LOG_VAR
from nsysgen.shipped.verify.report import HELPER_LOG
from nsysgen.targets.eks.injection import (
    torchrun_args,
)
from nsysgen.targets.eks.names import (
    NSYS_TMP,
    POD_VAR,
    REPORTS_VOLUME,
    SHARED_VOLUME,
    SITE_MOUNT,
    SITE_VOLUME,
    STATE_DIR,
    TMP_VOLUME,
    TRAINER_CONTAINER,
    eks_settings,
    injector,
    mounts_shared_fs,
    profiled_replicas,
    report_subpath,
    reports_on_volume,
    runtime_job,
)


def uses_helper(plan: ProfilePlan) -> bool:
    """The pods load the step helper from its ConfigMap: on PYTHONPATH (zero-patch), or by
    NSYSGEN_HELPER_DIR (a patched loop)."""
    return plan.facts.steps.site or plan.facts.steps.helper_dir


@cache
def site_configmap() -> dict[str, Any]:
    """The ConfigMap that carries the zero-patch helper into every pod: one for every folder of
    the generated tree (at its top), applied into a job's namespace by its apply-site.sh. Named
    by its content, so that a newer helper never replaces the one a running job mounts."""
    shared = header("#", shared=True)
    site = render_template("common/sitecustomize.py.j2", header=shared)
    helper = render_template(
        "common/nsysgen_window.py.j2", header=shared, source=source_text("step_window")
    )
    data = {"sitecustomize.py": site, STEP_WINDOW_FILE: helper}
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"nsysgen-site-{digest}"},
        "data": data,
    }


def _env(config: Config, plan: ProfilePlan) -> list[dict[str, Any]]:
    target = eks_settings(config)
    # nsys stages its injection libraries in TMPDIR, and a container's /tmp may be mounted
    # noexec: give it an emptyDir of its own unless the config chose a TMPDIR.
    environment = plan.facts.job_env.pairs()
    tmpdir = [] if "TMPDIR" in dict(environment) else [("TMPDIR", NSYS_TMP)]
    values = dict([*environment, *plan.facts.steps.env, *tmpdir])
    if plan.facts.steps.site:
        # Container env replaces the image's PYTHONPATH: keep the one the config sets.
        theirs = values.get("PYTHONPATH")
        values["PYTHONPATH"] = f"{SITE_MOUNT}:{theirs}" if theirs else SITE_MOUNT
    elif plan.facts.steps.helper_dir:
        values[HELPER_DIR] = SITE_MOUNT  # the patched loop imports the helper from there
    if plan.facts.steps.marks and reports_on_volume(config):
        # What the step helper says, also into the pod's folder on the reports volume (nsys's
        # TMPDIR there): `nsysgen verify` gives it as the cause where the window is not as asked.
        values[HELPER_LOG_VAR] = f"{NSYS_TMP}/{HELPER_LOG}"
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in sorted(values.items())
    ]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": ref["secret"], "key": ref["key"]}}}
        for name, ref in sorted(target.secret_env.items())
    ]
    if reports_on_volume(config):
        # The pod's name, for the TMPDIR mount's subPathExpr (one folder per pod).
        env.append({"name": POD_VAR, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    return env


def profiling_env(config: Config, plan: ProfilePlan) -> list[dict[str, Any]]:
    """What profiling adds to a job of the user's own: the step window, nsys's TMPDIR, the
    helper's PYTHONPATH, the pod's name, nsysgen's env defaults (not the rest of the cluster's
    env, nor secrets, which are theirs). The patch skips a name their container sets itself."""
    defaults = plan.facts.own_job_env.names()
    theirs = plan.facts.job_env.names() - defaults
    mine = theirs | set(eks_settings(config).secret_env)
    return [e for e in _env(config, plan) if e["name"] not in mine or e["name"] == "PYTHONPATH"]


def profiling_volumes(
    config: Config, plan: ProfilePlan
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The volumes and mounts profiling adds (not /dev/shm nor the script's shared filesystem,
    which are the job's own)."""
    theirs = ("dshm", SHARED_VOLUME)
    volumes = [v for v in _volumes(config, plan) if v["name"] not in theirs]
    return volumes, [m for m in _mounts(config, plan) if m["name"] not in theirs]


def _resources(config: Config) -> dict[str, Any]:
    resources: dict[str, Any] = {"nvidia.com/gpu": config.cluster.gpus_per_node}
    if config.cluster.efa_devices:
        resources["vpc.amazonaws.com/efa"] = config.cluster.efa_devices
    resources.update(eks_settings(config).extra_resources)
    return {"requests": resources, "limits": dict(resources)}


def grace_seconds(config: Config, plan: ProfilePlan) -> int:
    """terminationGracePeriodSeconds: the time between SIGTERM (at the job's deadline, or on
    delete) and SIGKILL, room for nsys to write a report of this setup, as Slurm's early
    --signal=TERM@S gives it; or the configured value."""
    configured = eks_settings(config).termination_grace_period_s
    return configured if configured is not None else plan.teardown.write_s


def _mounts(config: Config, plan: ProfilePlan) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if reports_on_volume(config):
        # The reports volume is declared here only (the injector's values add none). nsys's
        # TMPDIR is a folder of the pod in the report folder: the kubelet creates a mount's
        # sub-path, so the report folder exists before nsys writes, and a capture the pod's end
        # cut off stays on the volume as a .qdstrm, not in an emptyDir that goes with the pod.
        mounts.append({"name": REPORTS_VOLUME, "mountPath": config.cluster.shared_fs})
        state = posixpath.normpath(
            posixpath.join(report_subpath(config), STATE_DIR, f"$({POD_VAR})")
        )
        mounts.append({"name": TMP_VOLUME, "mountPath": NSYS_TMP, "subPathExpr": state})
    else:
        mounts.append({"name": TMP_VOLUME, "mountPath": NSYS_TMP})
        if mounts_shared_fs(config):
            # The training script is on the shared filesystem (issue 40: without this mount
            # torchrun finds no script and the job fails at start).
            mounts.append({"name": SHARED_VOLUME, "mountPath": config.cluster.shared_fs})
    if uses_helper(plan):
        mounts.append({"name": SITE_VOLUME, "mountPath": SITE_MOUNT, "readOnly": True})
    return mounts


def _volumes(config: Config, plan: ProfilePlan) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    if reports_on_volume(config):
        claim = {"claimName": eks_settings(config).reports_pvc}
        volumes.append({"name": REPORTS_VOLUME, "persistentVolumeClaim": claim})
        # The same claim again: a runtime patch keys a container's mounts by volume name.
        volumes.append({"name": TMP_VOLUME, "persistentVolumeClaim": dict(claim)})
    else:
        # 26.x stages reports in the container and uploads them: no shared volume to keep.
        volumes.append({"name": TMP_VOLUME, "emptyDir": {}})
        if mounts_shared_fs(config):
            claim = {"claimName": eks_settings(config).reports_pvc}
            volumes.append({"name": SHARED_VOLUME, "persistentVolumeClaim": claim})
    if uses_helper(plan):
        configmap = {"name": site_configmap()["metadata"]["name"]}
        volumes.append({"name": SITE_VOLUME, "configMap": configmap})
    return volumes


def _container(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    target = eks_settings(config)
    return {
        "name": "pytorch",  # the training operator requires a container of this name
        "image": config.workload.container_image,
        "imagePullPolicy": "IfNotPresent",
        # torchrun itself, not `bash -c "torchrun ..."`: the injector matches this process, and
        # torchrun reads PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR/PORT set by the operator.
        "command": [target.torchrun_path],
        "args": torchrun_args(config),
        "env": _env(config, plan),
        "resources": _resources(config),
        "volumeMounts": _mounts(config, plan),
    }


def pytorchjob(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    target = eks_settings(config)
    labelled = profiled_replicas(config)

    def replica(kind: str, replicas: int) -> dict[str, Any]:
        labels = {"app": config.job.name}
        if kind in labelled:
            labels[injector(config).label] = "enabled"
        return {
            "replicas": replicas,
            "restartPolicy": target.restart_policy,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": grace_seconds(config, plan),
                    "nodeSelector": {
                        "node.kubernetes.io/instance-type": config.cluster.instance_type
                    },
                    "containers": [_container(config, plan)],
                    "volumes": _volumes(config, plan),
                },
            },
        }

    specs = {"Master": replica("Master", 1)}
    if config.cluster.nodes > 1:
        specs["Worker"] = replica("Worker", config.cluster.nodes - 1)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": config.job.name, "namespace": target.namespace},
        "spec": {
            "nprocPerNode": str(config.cluster.gpus_per_node),
            "runPolicy": {
                # job.time_limit_min: the operator ends the job there (SIGTERM, then SIGKILL
                # after the grace period). Unlike Slurm's --time it counts from the job's
                # start as the operator records it: scheduling and pulls count against it.
                "activeDeadlineSeconds": plan.time_limit_s,
                "backoffLimit": 0,
                "cleanPodPolicy": "None",
            },
            "pytorchReplicaSpecs": specs,
        },
    }


def trainjob(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    """A Kubeflow Trainer v2 TrainJob on the torch-distributed runtime.

    The trainer block carries image, torchrun, nodes, GPUs and EFA devices, env and secret
    references; one runtimePatches entry adds what the trainer block cannot: the injector
    label, the volumes and their mounts, the node selector, the grace period. The Trainer merges
    it into the runtime's replicated job of that name with Kubernetes' strategic merge (lists of
    volumes, containers and mounts by their keys): 2.2 job by job, 2.3 and later over the whole
    JobSet spec; both refuse a patch naming a job or container the runtime lacks, or env for
    the `node` container (so env goes in the trainer block). Every pod of the one
    replicated job gets the same patch, so every pod is labelled (see recording_nodes).
    """
    target = eks_settings(config)
    labels = {"app": config.job.name, injector(config).label: "enabled"}
    node_selector = {"node.kubernetes.io/instance-type": config.cluster.instance_type}
    patch = runtime_patch(
        config,
        plan,
        labels,
        _volumes(config, plan),
        _mounts(config, plan),
        {"nodeSelector": node_selector},
    )
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": config.job.name, "namespace": target.namespace},
        "spec": {
            # job.time_limit_min: the Trainer deletes the JobSet there (SIGTERM to the pods,
            # SIGKILL after the grace period). Unlike Slurm's --time it counts from the
            # TrainJob's creation: scheduling and image pulls count against it.
            "activeDeadlineSeconds": plan.time_limit_s,
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": target.runtime_kind,
                "name": target.runtime,
            },
            "trainer": {
                "image": config.workload.container_image,
                # torchrun itself, not `bash -c "torchrun ..."`: the injector matches this
                # process; torchrun reads PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR/PORT.
                "command": [target.torchrun_path],
                "args": torchrun_args(config),
                "numNodes": config.cluster.nodes,
                "numProcPerNode": config.cluster.gpus_per_node,
                "resourcesPerNode": _resources(config),
                "env": _env(config, plan),
            },
            "runtimePatches": [patch],
        },
    }


def runtime_patch(
    config: Config,
    plan: ProfilePlan,
    labels: dict[str, str],
    volumes: list[dict[str, Any]],
    mounts: list[dict[str, Any]],
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """nsysgen's runtimePatches entry: `labels`, `volumes` and `mounts` (and `spec`'s other
    fields) on every pod of the runtime's replicated job, with the grace period where the
    Trainer's pod patch has it (2.3 added it; lint NSG020 on 2.2)."""
    pod_spec: dict[str, Any] = {
        **(spec or {}),
        "volumes": volumes,
        "containers": [{"name": TRAINER_CONTAINER, "volumeMounts": mounts}],
    }
    if eks_settings(config).trainer_version != "2.2":
        pod_spec["terminationGracePeriodSeconds"] = grace_seconds(config, plan)
    job = {
        "name": runtime_job(config),
        "template": {"spec": {"template": {"metadata": {"labels": labels}, "spec": pod_spec}}},
    }
    return {
        "manager": "nsysgen",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
    }


def fetch_pod_overrides(config: Config) -> str:
    """`kubectl run --overrides`: a helper pod that mounts the reports volume."""
    target = eks_settings(config)
    spec = {
        "spec": {
            "volumes": [
                {
                    "name": REPORTS_VOLUME,
                    "persistentVolumeClaim": {"claimName": target.reports_pvc},
                }
            ],
            "containers": [
                {
                    "name": "fetch",
                    "image": "busybox:1.36",
                    "command": ["sleep", "3600"],
                    "volumeMounts": [
                        {"name": REPORTS_VOLUME, "mountPath": config.cluster.shared_fs}
                    ],
                }
            ],
        }
    }
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))
