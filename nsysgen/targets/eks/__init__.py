"""EKS target: injector Helm values, a PyTorchJob, and the scripts around them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nsysgen import nsys_cmd
from nsysgen.errors import Issue
from nsysgen.lints import Lint
from nsysgen.model import Block, Config, TargetSettings, settings_as
from nsysgen.plan import ProfilePlan, RecordedTasks, expand_name
from nsysgen.recipes import recipe_runs
from nsysgen.render import ArtifactSpec
from nsysgen.targets.common import recipes_script, workload_files
from nsysgen.targets.eks.injection import (
    injection_issues,
    injection_pattern,
    process_lines,
    torchrun_args,
)
from nsysgen.targets.eks.settings import EksSettings
from nsysgen.workloads import step_window_env, typed_block

_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
# What the training operator and the kubelet set in a PyTorchJob pod.
EKS_POD_VARS = frozenset(
    {
        "HOSTNAME",
        "PET_NNODES",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
        "PET_NPROC_PER_NODE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
    }
)


def eks_settings(config: Config) -> EksSettings:
    return settings_as(config.target.settings, EksSettings)


@dataclass(frozen=True)
class Injector:
    """What differs between the sidecar injector 1.0.x and the Nsight Operator 1.x."""

    label: str
    process: str
    pod: str
    container: str
    unique: str  # extra name parts that keep names unique across restarts
    leftovers: bool  # known objects `helm uninstall` leaves behind


INJECTORS = {
    "sidecar": Injector(
        "nvidia-devtools-sidecar-injector",
        "{PROCESS_NAME}",
        "%{POD_FULLNAME}",
        "%{CONTAINER_NAME}",
        "_{TIMESTAMP}_{UID}",
        True,
    ),
    "operator": Injector(
        "nvidia-nsight-profile",
        "{NVDT_PROCESS_NAME}",
        "%{NVDT_POD_FULLNAME}",
        "%{NVDT_CONTAINER_NAME}",
        "",
        False,
    ),
}
REPORTS_VOLUME = "nsys-reports"


def injector(config: Config) -> Injector:
    return INJECTORS[eks_settings(config).injector]


def report_output(config: Config) -> str:
    flavor = injector(config)
    name = f"{config.job.name}_{flavor.process}_{flavor.pod}_{flavor.container}{flavor.unique}"
    return f"{config.capture.report_dir}/{name}"


def devtool_args(plan: ProfilePlan) -> str:
    # One nsys per profiled pod, and a pod is a node: collectors run once per node.
    return " ".join(["profile", *plan.profile_args, *plan.collector_args])


def profiled_replicas(config: Config) -> tuple[str, ...]:
    """Replica types whose pods carry the injector label (Master = node 0)."""
    ranks = config.capture.ranks
    nodes = config.cluster.nodes
    if isinstance(ranks, str):
        return ("Master", "Worker") if nodes > 1 else ("Master",)
    profiled = {rank // config.cluster.gpus_per_node for rank in ranks}
    return ("Master",) if profiled == {0} else ("Master", "Worker")


def helm_values(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    target = eks_settings(config)
    volumes = [{"name": REPORTS_VOLUME, "persistentVolumeClaim": {"claimName": target.reports_pvc}}]
    mounts = [{"name": REPORTS_VOLUME, "mountPath": config.cluster.shared_fs}]
    profile: dict[str, Any] = {
        "devtoolArgs": devtool_args(plan),
        "volumes": volumes,
        "volumeMounts": mounts,
    }
    if target.injector == "sidecar":
        profile["injectionMatch"] = injection_pattern(config)
    else:
        profile["injectionIncludePatterns"] = [injection_pattern(config)]
    return {
        "devtoolBinariesImage": {
            "image": target.nsight_image,
            "imagePullPolicy": "IfNotPresent",
        },
        "profile": profile,
    }


NSYS_TMP = "/nsys-tmp"  # an emptyDir: writable and exec-able whatever the image's /tmp is


def _container(config: Config) -> dict[str, Any]:
    target = eks_settings(config)
    # nsys stages its injection libraries in TMPDIR, and a container's /tmp may be mounted
    # noexec: give it an emptyDir of its own unless the config chose a TMPDIR.
    tmpdir = [] if "TMPDIR" in dict(config.cluster.env) else [("TMPDIR", NSYS_TMP)]
    env: list[dict[str, Any]] = [
        {"name": name, "value": value}
        for name, value in sorted([*config.cluster.env, *step_window_env(config), *tmpdir])
    ]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": ref["secret"], "key": ref["key"]}}}
        for name, ref in sorted(target.secret_env.items())
    ]
    resources: dict[str, Any] = {"nvidia.com/gpu": config.cluster.gpus_per_node}
    if config.cluster.efa_devices:
        resources["vpc.amazonaws.com/efa"] = config.cluster.efa_devices
    resources.update(target.extra_resources)
    return {
        "name": "pytorch",  # the training operator requires a container of this name
        "image": config.workload.container_image,
        "imagePullPolicy": "IfNotPresent",
        # torchrun itself, not `bash -c "torchrun ..."`: the injector matches this process, and
        # torchrun reads PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR/PORT set by the operator.
        "command": [target.torchrun_path],
        "args": torchrun_args(config),
        "env": env,
        "resources": {"requests": resources, "limits": dict(resources)},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "nsys-tmp", "mountPath": NSYS_TMP},
            {"name": REPORTS_VOLUME, "mountPath": config.cluster.shared_fs},
        ],
    }


def pytorchjob(config: Config) -> dict[str, Any]:
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
                    "terminationGracePeriodSeconds": target.termination_grace_period_s,
                    "nodeSelector": {
                        "node.kubernetes.io/instance-type": config.cluster.instance_type
                    },
                    "containers": [_container(config)],
                    "volumes": [
                        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                        {"name": "nsys-tmp", "emptyDir": {}},
                        {
                            "name": REPORTS_VOLUME,
                            "persistentVolumeClaim": {"claimName": target.reports_pvc},
                        },
                    ],
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
            "runPolicy": {"backoffLimit": 0, "cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": specs,
        },
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


def checks(config: Config) -> Iterator[Issue]:
    workload = config.workload
    if workload.kind != "fsdp":
        yield Issue(
            "workload.kind",
            f"target eks runs PyTorch jobs with one torchrun per pod; "
            f"{workload.kind!r} is not one (allowed: workload=fsdp)",
        )
        return
    if not workload.container_image:
        yield Issue(
            "workload.container_image",
            "target eks needs the training image (allowed: "
            "an image reference, e.g. <account>.dkr.ecr.<region>.amazonaws.com/fsdp:tag)",
        )
    if not _DNS_1035.match(config.job.name):
        yield Issue(
            "job.name",
            f"{config.job.name!r} is not a PyTorchJob name (allowed: a "
            "DNS-1035 label: lower-case letters, digits and '-', starting with a letter)",
        )
    if " " in config.capture.report_dir:
        yield Issue(
            "capture.report_dir",
            "the injector passes nsys arguments as one "
            "space-separated string (allowed: a path without spaces)",
        )
    ranks = config.capture.ranks
    if isinstance(ranks, tuple):
        nodes = sorted({rank // config.cluster.gpus_per_node for rank in ranks})
        if nodes != [0] and nodes != list(range(config.cluster.nodes)):
            yield Issue(
                "capture.ranks",
                f"ranks {list(ranks)} run on nodes {nodes}; the injector "
                "label selects the Master pod (node 0) or every pod (allowed: ranks on "
                "node 0, ranks on every node, one_per_node, all)",
            )
    yield from injection_issues(config)


def artifacts(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    target = eks_settings(config)
    flavor = injector(config)
    context = {
        "job_name": config.job.name,
        "namespace": target.namespace,
        "release": target.release,
        "chart": target.charts[target.injector],
        "injector": target.injector,
        "label": flavor.label,
        "leftovers": flavor.leftovers,
        "report_dir": config.capture.report_dir,
        "fetch_overrides": fetch_pod_overrides(config),
    }
    specs = [
        ArtifactSpec("values-injector.yaml", "common/yaml.j2", {"data": helm_values(config, plan)}),
        ArtifactSpec("pytorchjob.yaml", "common/yaml.j2", {"data": pytorchjob(config)}),
        ArtifactSpec("install-injector.sh", "eks/install-injector.sh.j2", context, True),
        ArtifactSpec("uninstall-injector.sh", "eks/uninstall-injector.sh.j2", context, True),
        ArtifactSpec("label-namespace.sh", "eks/label-namespace.sh.j2", context, True),
        ArtifactSpec("fetch-reports.sh", "eks/fetch-reports.sh.j2", context, True),
        recipes_script(config),
        *workload_files(config),
        *_verify_files(config),
    ]
    readme = {
        **context,
        "config": config,
        "files": sorted(s.path for s in specs),
        "labelled": profiled_replicas(config),
        "process": process_lines(config).torchrun,
        "pattern": injection_pattern(config),
        "report_pattern": report_output(config) + ".nsys-rep",
        "collector_args": list(plan.collector_args),
        "step_env": dict(step_window_env(config)),
        "recipe_folders": [run.folder for run in recipe_runs(config)],
    }
    specs.append(ArtifactSpec("README.md", "eks/README.md.j2", readme, comment="<!--"))
    return specs


def recorded(config: Config) -> RecordedTasks:
    """One report per labelled pod (a pod is a node), named by the injector's placeholders."""
    labelled = profiled_replicas(config)
    template = report_output(config)
    namespace = eks_settings(config).namespace
    collectors = bool(nsys_cmd.collector_args(config))

    def name_of(task: int, node: int, local: int) -> str:
        replica = "Master" if node == 0 else "Worker"
        pod = f"{config.job.name}-{replica.lower()}-{0 if node == 0 else node - 1}"
        injector_values = {
            "{PROCESS_NAME}": "python3",
            "{NVDT_PROCESS_NAME}": "python3",
            "%{POD_FULLNAME}": f"{namespace}_{pod}",
            "%{NVDT_POD_FULLNAME}": f"{namespace}_{pod}",
            "%{CONTAINER_NAME}": "pytorch",
            "%{NVDT_CONTAINER_NAME}": "pytorch",
            "{TIMESTAMP}": "<ms>",
            "{UID}": "<uid>",
        }
        name = template
        for placeholder, value in injector_values.items():
            name = name.replace(placeholder, value)
        return expand_name(name, {"HOSTNAME": pod}, host=pod, pid="pid0")

    start = 0 if "Master" in labelled else 1
    stop = config.cluster.nodes if "Worker" in labelled else min(1, config.cluster.nodes)
    return RecordedTasks(
        1, "node", name_of, lambda *_: collectors, start, max(start, stop), locals_=(0,)
    )


class Eks:
    name = "eks"
    unit = "pod"
    variables = EKS_POD_VARS
    misleading_variables: Mapping[str, str] = {}
    lints: tuple[Lint, ...] = ()
    schema = None

    def settings(self, block: Block) -> TargetSettings:
        settings: EksSettings = typed_block(EksSettings, block)
        return settings

    def tasks_per_node(self, config: Config) -> int:
        return 1  # one pod per node, whatever the launch

    def report_output(self, config: Config) -> str:
        return report_output(config)

    def recorded(self, config: Config) -> RecordedTasks:
        return recorded(config)

    def in_container(self, config: Config) -> bool:
        return True  # a pod runs containers

    def checks(self, config: Config) -> Iterator[Issue]:
        return checks(config)

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        return artifacts(config, plan)


TARGET = Eks()


def _verify_files(config: Config) -> list[ArtifactSpec]:
    # Imported here: verify_expect reads the plan, which imports the targets.
    from nsysgen.verify_expect import verify_files

    return verify_files(config)
