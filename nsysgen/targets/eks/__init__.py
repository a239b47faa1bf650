"""EKS target: injector Helm values, a TrainJob or PyTorchJob, and the scripts around them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nsysgen.errors import Issue
from nsysgen.model import Block, Config, TargetSettings, settings_as
from nsysgen.output.render import ArtifactSpec, header, render_template
from nsysgen.profile import nsys_cmd
from nsysgen.profile.lints import Lint
from nsysgen.profile.plan import ProfilePlan, RecordedTasks, expand_name
from nsysgen.profile.recipes import recipe_runs
from nsysgen.profile.workloads import SITE_FILE, step_window_env, typed_block, uses_site
from nsysgen.targets.common import recipes_script, upload_script, workload_files
from nsysgen.targets.eks.injection import (
    injection_issues,
    injection_pattern,
    process_lines,
    torchrun_args,
)
from nsysgen.targets.eks.settings import EksSettings
from nsysgen.targets.expect import verify_files

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
    """What differs between the sidecar injector 1.0.x and the Nsight Operator 1.x and 26.x."""

    label: str
    process: str
    pod: str
    container: str
    unique: str  # extra name parts that keep names unique across restarts
    leftovers: bool  # known objects `helm uninstall` leaves behind
    names_reports: bool = False  # 26.x: the operator names and stores reports (no -o)


INJECTORS = {
    "sidecar": Injector(
        "nvidia-devtools-sidecar-injector",
        "{PROCESS_NAME}",
        "%{POD_FULLNAME}",
        "%{CONTAINER_NAME}",
        "_{TIMESTAMP}_{UID}",
        True,
    ),
    "operator-1": Injector(
        "nvidia-nsight-profile",
        "{NVDT_PROCESS_NAME}",
        "%{NVDT_POD_FULLNAME}",
        "%{NVDT_CONTAINER_NAME}",
        "",
        False,
    ),
    "operator-26": Injector("nvidia-nsight-profile", "", "", "", "", False, names_reports=True),
}
REPORTS_VOLUME = "nsys-reports"
# The operator-26 storage when capture.s3_uri is unset: the chart's in-cluster MinIO bucket.
MINIO_BUCKET = "nsight-reports"


def injector(config: Config) -> Injector:
    return INJECTORS[eks_settings(config).injector]


def storage(config: Config) -> str:
    """Where operator-26 stores reports: the bucket of capture.s3_uri, or in-cluster MinIO."""
    uri = config.capture.s3_uri
    return f"s3://{bucket(uri)}" if uri else f"minio://{MINIO_BUCKET}"


def bucket(uri: str) -> str:
    return uri.removeprefix("s3://").split("/", 1)[0]


def report_output(config: Config) -> str:
    flavor = injector(config)
    if flavor.names_reports:
        # 26.x: no -o; each profiled process uploads <report_uuid>/<name>.nsys-rep to storage.
        return f"{storage(config)}/<report_uuid>/<operator_named>"
    name = f"{config.job.name}_{flavor.process}_{flavor.pod}_{flavor.container}{flavor.unique}"
    return f"{config.capture.report_dir}/{name}"


def devtool_args(plan: ProfilePlan) -> str:
    # One nsys per profiled pod, and a pod is a node: collectors run once per node.
    return " ".join(["profile", *plan.profile_args, *plan.collector_args])


def coordinator_mode(config: Config) -> bool:
    """26.x Coordinator Mode: the coordinator opens a delay/duration window; the program opens
    a step or NVTX window itself (cudaProfilerApi / nvtx capture range)."""
    setting = eks_settings(config).coordinator
    return config.capture.mode == "window" if setting == "auto" else bool(setting)


_OPERATOR_OWNED = ("--output", "--force-overwrite")  # 26.x names and uploads reports itself
_WINDOW_SWITCHES = ("--delay", "--duration", "--kill")  # the coordinator's, in Coordinator Mode


def tool_args(config: Config, plan: ProfilePlan) -> str:
    """nsightToolArgs: nsys flags only (no `profile`, no -o), one string."""
    drop = _OPERATOR_OWNED + (_WINDOW_SWITCHES if coordinator_mode(config) else ())
    args = [a for a in (*plan.profile_args, *plan.collector_args) if a.split("=")[0] not in drop]
    return " ".join(args)


def profiled_replicas(config: Config) -> tuple[str, ...]:
    """Replica types whose pods carry the injector label (Master = node 0)."""
    if eks_settings(config).job == "trainjob":
        return ("node",)  # one replicated job, homogeneous pods: all labelled
    ranks = config.capture.ranks
    nodes = config.cluster.nodes
    if isinstance(ranks, str):
        return ("Master", "Worker") if nodes > 1 else ("Master",)
    profiled = {rank // config.cluster.gpus_per_node for rank in ranks}
    return ("Master",) if profiled == {0} else ("Master", "Worker")


def recording_nodes(config: Config) -> list[int]:
    """Nodes whose pods record: all labelled pods, or (TrainJob, step window) the nodes of the
    ranks in NSYSGEN_PROFILE_RANKS; the others run under nsys but never open the window."""
    nodes = config.cluster.nodes
    if eks_settings(config).job == "trainjob":
        if config.capture.mode != "steps":
            return list(range(nodes))  # the window opens in every labelled pod (NSG014)
        return _chosen_nodes(config)
    labelled = profiled_replicas(config)
    return [n for n in range(nodes) if ("Master" if n == 0 else "Worker") in labelled]


def helm_values(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    target = eks_settings(config)
    if target.injector == "operator-26":
        return helm_values_26(config, plan)
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


def helm_values_26(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    """Values of the nsight-operator chart 26.x (schemas/helm-nsight-operator-26.schema.json)."""
    target = eks_settings(config)
    injector_values: dict[str, Any] = {"privileged": target.privileged}
    if target.profile_config == "values":
        injector_values["nsightToolConfig"] = {
            "coordinator": coordinator_mode(config),
            "nsightToolArgs": tool_args(config, plan),
            "injectionIncludePatterns": [injection_pattern(config)],
        }
    cloud: dict[str, Any] = {"enabled": True}
    if config.capture.s3_uri:
        cloud["minio"] = {"enabled": False}
        cloud["secretRef"] = {"name": target.storage_secret}
    else:
        cloud["minio"] = {"enabled": True}
    values: dict[str, Any] = {"nsight-injector": injector_values, "cloudStorage": cloud}
    if not target.machine_config:
        values["machineConfig"] = None
    return values


def profile_config(config: Config, plan: ProfilePlan) -> dict[str, Any]:
    """The 26.3 NsightOperatorProfileConfig for this job (its rule schema is unconfirmed)."""
    target = eks_settings(config)
    name = config.job.name
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NsightOperatorProfileConfig",
        "metadata": {"name": f"{name}-profile", "namespace": target.namespace},
        "spec": {
            "nsightToolConfigs": [
                {
                    "name": name,
                    "coordinator": coordinator_mode(config),
                    "nsightToolArgs": tool_args(config, plan),
                }
            ],
            "injectionRules": [
                {
                    "name": name,
                    "podSelector": {"matchLabels": {injector(config).label: "enabled"}},
                    "injectionIncludePatterns": [injection_pattern(config)],
                    "nsightToolConfig": name,
                }
            ],
        },
    }


NSYS_TMP = "/nsys-tmp"  # an emptyDir: writable and exec-able whatever the image's /tmp is
SITE_MOUNT = "/nsysgen-site"  # the zero-patch step helper, from the job's ConfigMap
SITE_VOLUME = "nsysgen-site"
SITE_CONFIGMAP_FILE = "nsysgen-site-configmap.yaml"


def _site_configmap_name(config: Config) -> str:
    return f"{config.job.name}-nsysgen-site"


def site_configmap(config: Config) -> dict[str, Any]:
    """The ConfigMap that carries the zero-patch helper into every pod (kubectl apply it with
    the job)."""
    text = render_template("common/sitecustomize.py.j2", header=header("#"))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": _site_configmap_name(config),
            "namespace": eks_settings(config).namespace,
        },
        "data": {"sitecustomize.py": text},
    }


TRAINER_STEP = "node"  # the torch-distributed runtime's replicated job and container


def _env(config: Config) -> list[dict[str, Any]]:
    target = eks_settings(config)
    # nsys stages its injection libraries in TMPDIR, and a container's /tmp may be mounted
    # noexec: give it an emptyDir of its own unless the config chose a TMPDIR.
    tmpdir = [] if "TMPDIR" in dict(config.cluster.env) else [("TMPDIR", NSYS_TMP)]
    values = dict([*config.cluster.env, *step_window_env(config), *tmpdir])
    if uses_site(config):
        # Container env replaces the image's PYTHONPATH: keep the one the config sets.
        theirs = values.get("PYTHONPATH")
        values["PYTHONPATH"] = f"{SITE_MOUNT}:{theirs}" if theirs else SITE_MOUNT
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in sorted(values.items())
    ]
    env += [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": ref["secret"], "key": ref["key"]}}}
        for name, ref in sorted(target.secret_env.items())
    ]
    return env


def _resources(config: Config) -> dict[str, Any]:
    resources: dict[str, Any] = {"nvidia.com/gpu": config.cluster.gpus_per_node}
    if config.cluster.efa_devices:
        resources["vpc.amazonaws.com/efa"] = config.cluster.efa_devices
    resources.update(eks_settings(config).extra_resources)
    return {"requests": resources, "limits": dict(resources)}


def _reports_on_pvc(config: Config) -> bool:
    return not injector(config).names_reports  # 26.x uploads reports to its storage


def _mounts(config: Config) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "nsys-tmp", "mountPath": NSYS_TMP},
    ]
    if _reports_on_pvc(config):
        mounts.append({"name": REPORTS_VOLUME, "mountPath": config.cluster.shared_fs})
    if uses_site(config):
        mounts.append({"name": SITE_VOLUME, "mountPath": SITE_MOUNT, "readOnly": True})
    return mounts


def _volumes(config: Config) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "nsys-tmp", "emptyDir": {}},
    ]
    if _reports_on_pvc(config):
        claim = {"claimName": eks_settings(config).reports_pvc}
        volumes.append({"name": REPORTS_VOLUME, "persistentVolumeClaim": claim})
    if uses_site(config):
        configmap = {"name": _site_configmap_name(config)}
        volumes.append({"name": SITE_VOLUME, "configMap": configmap})
    return volumes


def _container(config: Config) -> dict[str, Any]:
    target = eks_settings(config)
    return {
        "name": "pytorch",  # the training operator requires a container of this name
        "image": config.workload.container_image,
        "imagePullPolicy": "IfNotPresent",
        # torchrun itself, not `bash -c "torchrun ..."`: the injector matches this process, and
        # torchrun reads PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR/PORT set by the operator.
        "command": [target.torchrun_path],
        "args": torchrun_args(config),
        "env": _env(config),
        "resources": _resources(config),
        "volumeMounts": _mounts(config),
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
                    "volumes": _volumes(config),
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


def trainjob(config: Config) -> dict[str, Any]:
    """A Kubeflow Trainer v2 TrainJob on the torch-distributed runtime.

    The trainer block carries image, torchrun, nodes, GPUs and EFA devices, env and secret
    references; one runtimePatches entry (the v2.2+ API) adds what the trainer block cannot:
    the injector label, the volumes and their mounts, the node selector. Every pod of the one
    replicated job gets the same patch, so every pod is labelled (see recording_nodes).
    """
    target = eks_settings(config)
    labels = {"app": config.job.name, injector(config).label: "enabled"}
    pod_patch = {
        "metadata": {"labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": target.termination_grace_period_s,
            "nodeSelector": {"node.kubernetes.io/instance-type": config.cluster.instance_type},
            "volumes": _volumes(config),
            "containers": [{"name": TRAINER_STEP, "volumeMounts": _mounts(config)}],
        },
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": config.job.name, "namespace": target.namespace},
        "spec": {
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
                "env": _env(config),
            },
            "runtimePatches": [
                {
                    "manager": "nsysgen",
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": TRAINER_STEP,
                                        "template": {"spec": {"template": pod_patch}},
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
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


def _kind(config: Config) -> str:
    return "TrainJob" if eks_settings(config).job == "trainjob" else "PyTorchJob"


def checks(config: Config) -> Iterator[Issue]:
    workload = config.workload
    target = eks_settings(config)
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
            f"{config.job.name!r} is not a {_kind(config)} name (allowed: a "
            "DNS-1035 label: lower-case letters, digits and '-', starting with a letter)",
        )
    yield from _split_args(config)
    yield from _rank_issues(config)
    coordinated = target.injector == "operator-26" and target.coordinator is True
    if coordinated and config.capture.mode != "window":
        yield Issue(
            "target.coordinator",
            f"capture={config.capture.mode}: the program opens the window itself, which "
            "Coordinator Mode would leave to the coordinator (allowed: auto or false, or "
            "capture=window)",
        )
    yield from injection_issues(config)


_SHELL_SYNTAX = frozenset("$`;&|<>()[]*?!#\\'\"")


def _split_args(config: Config) -> Iterator[Issue]:
    """The injectors take nsys's arguments as one string and split it on whitespace: a value
    with a space would become several arguments. Whether they pass the string through a shell
    is not documented, so shell syntax is refused there too."""
    sources: list[tuple[str, str]] = [("capture.report_dir", config.capture.report_dir)]
    sources += [(f"capture.extra_args[{i}]", a) for i, a in enumerate(config.capture.extra_args)]
    sources += [
        (f"nsight.plugins.{name}[{i}]", flag)
        for name, flags in sorted(config.nsight.plugins.items())
        for i, flag in enumerate(flags)
    ]
    if config.nsight.gpu_metrics_node_value is not None:
        sources.append(("nsight.gpu_metrics.node_value", config.nsight.gpu_metrics_node_value))
    if config.capture.report_name is not None:
        sources.append(("capture.report_name", config.capture.report_name))
    for path, value in sources:
        if any(c.isspace() or c in _SHELL_SYNTAX for c in value):
            yield Issue(
                path,
                f"{value!r}: the injector passes nsys arguments as one string split on spaces "
                "(allowed: a value without spaces, quotes or shell syntax $ ` ; & | < > ( ) "
                "[ ] * ? ! # \\)",
            )


def _rank_issues(config: Config) -> Iterator[Issue]:
    ranks = config.capture.ranks
    if not isinstance(ranks, tuple):
        return
    nodes = sorted({rank // config.cluster.gpus_per_node for rank in ranks})
    if nodes == list(range(config.cluster.nodes)):
        return
    if eks_settings(config).job == "trainjob":
        return  # every pod is labelled: NSG014 says what that costs
    if nodes != [0]:
        yield Issue(
            "capture.ranks",
            f"ranks {list(ranks)} run on nodes {nodes}; the injector "
            "label selects the Master pod (node 0) or every pod (allowed: ranks on "
            "node 0, ranks on every node, one_per_node, all)",
        )


def _chosen_nodes(config: Config) -> list[int]:
    ranks = config.capture.ranks
    if isinstance(ranks, str):
        return list(range(config.cluster.nodes))
    return sorted({rank // config.cluster.gpus_per_node for rank in ranks})


def _every_pod_under_nsys(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if eks_settings(config).job != "trainjob":
        return
    pods = config.cluster.nodes
    chosen = _chosen_nodes(config)
    recording = len(plan.recorded)
    slowdown = plan.slowdown
    cost = (
        f"~{slowdown.rank_percent:g} % slower outside the window ({slowdown.basis})"
        if slowdown.rank_percent
        else "nsys start-up and memory only (no CUDA tracing)"
    )
    if recording > len(chosen):
        yield (
            "capture.ranks",
            f"a TrainJob labels all {pods} pods alike and capture={config.capture.mode} opens "
            f"the window in every one of them: {recording} pods record, not only the "
            f"{len(chosen)} node(s) of capture.ranks (capture=steps records only the chosen "
            "ranks; target.job=pytorchjob labels only the Master pod)",
        )
    elif recording < pods:
        yield (
            "target.job",
            f"a TrainJob labels all {pods} pods alike: every pod runs torchrun under nsys, and "
            f"only the {recording} pod(s) of NSYSGEN_PROFILE_RANKS open the window; the other "
            f"{pods - recording} pay the injection too: {cost}",
        )


EVERY_POD_LINT = Lint(
    "NSG014",
    "a TrainJob runs every pod under nsys, also those whose ranks do not record",
    "accept the cost, record every node, or use target.job=pytorchjob to label only some pods",
    "warning",
    _every_pod_under_nsys,
)


def _scripts_context(config: Config) -> dict[str, Any]:
    target = eks_settings(config)
    flavor = injector(config)
    uri = config.capture.s3_uri
    return {
        "job_name": config.job.name,
        "job_kind": _kind(config),
        "job_file": f"{target.job}.yaml",
        "namespace": target.namespace,
        "operator_namespace": target.operator_namespace,
        "release": target.release,
        "chart": target.charts[target.injector],
        "injector": target.injector,
        "label": flavor.label,
        "leftovers": flavor.leftovers,
        "report_dir": config.capture.report_dir,
        "fetch_overrides": fetch_pod_overrides(config),
        "s3_uri": uri,
        "bucket": bucket(uri) if uri else None,
        "storage_secret": target.storage_secret,
        "profile_config": target.profile_config == "resource",
        "coordinator": coordinator_mode(config),
        "delay": config.capture.delay or 0,
        "duration": config.capture.duration,
    }


def artifacts(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    target = eks_settings(config)
    context = _scripts_context(config)
    job = trainjob(config) if target.job == "trainjob" else pytorchjob(config)
    specs = [
        ArtifactSpec("values-injector.yaml", "common/yaml.j2", {"data": helm_values(config, plan)}),
        ArtifactSpec(f"{target.job}.yaml", "common/yaml.j2", {"data": job}),
        ArtifactSpec("label-namespace.sh", "eks/label-namespace.sh.j2", context, True),
        recipes_script(config),
        # The zero-patch helper reaches the pods through a ConfigMap, not a file of the folder.
        *[spec for spec in workload_files(config) if spec.path != SITE_FILE],
        *verify_files(config, plan, TARGET),
    ]
    if uses_site(config):
        specs.append(
            ArtifactSpec(SITE_CONFIGMAP_FILE, "common/yaml.j2", {"data": site_configmap(config)})
        )
    upload = upload_script(config)
    if upload is not None:
        specs.append(upload)
    if target.injector == "operator-26":
        specs += [
            ArtifactSpec("install-injector.sh", "eks/install-operator-26.sh.j2", context, True),
            ArtifactSpec("upgrade-injector.sh", "eks/upgrade-operator-26.sh.j2", context, True),
            ArtifactSpec("uninstall-injector.sh", "eks/uninstall-operator-26.sh.j2", context, True),
            ArtifactSpec("fetch-reports.sh", "eks/fetch-reports-26.sh.j2", context, True),
        ]
        if target.profile_config == "resource":
            data = {"data": profile_config(config, plan)}
            specs.append(ArtifactSpec("profile-config.yaml", "common/yaml.j2", data))
        if config.capture.s3_uri:
            specs.append(
                ArtifactSpec("storage-secret.sh", "eks/storage-secret.sh.j2", context, True)
            )
        if coordinator_mode(config):
            specs.append(
                ArtifactSpec("capture-window.sh", "eks/capture-window.sh.j2", context, True)
            )
    else:
        specs += [
            ArtifactSpec("install-injector.sh", "eks/install-injector.sh.j2", context, True),
            ArtifactSpec("uninstall-injector.sh", "eks/uninstall-injector.sh.j2", context, True),
            ArtifactSpec("fetch-reports.sh", "eks/fetch-reports.sh.j2", context, True),
        ]
    readme = {
        **context,
        "config": config,
        "target": target,
        "files": sorted(s.path for s in specs),
        "labelled": profiled_replicas(config),
        "recording_nodes": recording_nodes(config),
        "process": process_lines(config).torchrun,
        "pattern": injection_pattern(config),
        "report_pattern": report_output(config) + ".nsys-rep",
        "names_reports": injector(config).names_reports,
        "tool_args": tool_args(config, plan),
        "collector_args": list(plan.collector_args),
        "step_env": dict(step_window_env(config)),
        "steps": plan.steps,
        "recipe_folders": [run.folder for run in recipe_runs(config)],
    }
    specs.append(ArtifactSpec("README.md", "eks/README.md.j2", readme, comment="<!--"))
    return specs


def _pod_name(config: Config, node: int) -> str:
    if eks_settings(config).job == "trainjob":
        return f"{config.job.name}-{TRAINER_STEP}-0-{node}"  # JobSet: <job>-<step>-<job#>-<pod#>
    return f"{config.job.name}-{'master' if node == 0 else 'worker'}-{0 if node == 0 else node - 1}"


def report_name(config: Config, node: int) -> str:
    """The report of the pod of `node`, named by the injector's placeholders."""
    pod = _pod_name(config, node)
    if injector(config).names_reports:
        return f"{storage(config)}/<report_uuid>/<tag>_python3_{pod}_<hash>"
    injector_values = {
        "{PROCESS_NAME}": "python3",
        "{NVDT_PROCESS_NAME}": "python3",
        "%{POD_FULLNAME}": f"{eks_settings(config).namespace}_{pod}",
        "%{NVDT_POD_FULLNAME}": f"{eks_settings(config).namespace}_{pod}",
        "%{CONTAINER_NAME}": "pytorch",
        "%{NVDT_CONTAINER_NAME}": "pytorch",
        "{TIMESTAMP}": "<ms>",
        "{UID}": "<uid>",
    }
    name = report_output(config)
    for placeholder, value in injector_values.items():
        name = name.replace(placeholder, value)
    return expand_name(name, {"HOSTNAME": pod}, host=pod, pid="pid0")


def recorded(config: Config) -> RecordedTasks:
    """One report per recording pod (a pod is a node): every node as a range when all record
    (names expand on request), else the chosen few as a list."""
    collectors = bool(nsys_cmd.collector_args(config))

    def name_of(task: int, node: int, local: int) -> str:
        return report_name(config, node)

    def collects(task: int, node: int, local: int) -> bool:
        return collectors

    nodes = recording_nodes(config)
    if len(nodes) == config.cluster.nodes:
        return RecordedTasks(1, "node", name_of, collects, 0, len(nodes), locals_=(0,))
    listed = tuple((node, node, 0) for node in nodes)
    return RecordedTasks(1, "node", name_of, collects, listed=listed)


class Eks:
    name = "eks"
    unit = "pod"
    variables = EKS_POD_VARS
    misleading_variables: Mapping[str, str] = {}
    lints: tuple[Lint, ...] = (EVERY_POD_LINT,)
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
