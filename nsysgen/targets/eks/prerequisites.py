"""What must be on the cluster before `kubectl apply`: each thing with the command that checks it
and where it comes from (the folder's README, "Before you apply", and `nsysgen plan`).

Only what a user installs or makes: the scripts of the folder install the injector, and say so.
Every command is read-only (get, describe, helm status; the image's probe runs the image on
this machine, with docker, and touches no cluster) and its values shell-quoted.
"""

from __future__ import annotations

import re
from shlex import quote

from nsysgen.model import Config
from nsysgen.targets.eks.names import (
    eks_settings,
    mounts_shared_fs,
    reports_on_volume,
    script_path,
    script_place,
)

Prerequisite = tuple[str, str, str]  # (what, command that checks it, where it comes from)

# The Nsight Operator's CLI (capture-window.sh, fetch-reports.sh and upgrade-injector.sh run it):
# named in the Nsight Operator User Guide, downloaded from NGC apart from the chart.
CLI_BUNDLE = "nsight-operator-resources"
OPERATOR_DOCS = "docs.nvidia.com/nsight-operator (Installation Guide, User Guide)"


def chart_version(chart: str) -> str | None:
    """The version in a chart URL (`.../nsight-operator-26.3.1.tgz` -> 26.3.1)."""
    found = re.search(r"-(\d+(?:\.\d+)+)\.tgz$", chart)
    return found.group(1) if found else None


def cli_source(config: Config) -> str:
    """Where nsight_operator.py comes from, in words (no shell syntax: scripts echo it)."""
    target = eks_settings(config)
    version = chart_version(target.charts.get("operator-26", "")) or "of the chart"
    return (
        f"nsight_operator.py from NGC's {CLI_BUNDLE} bundle, version {version} as the chart "
        "(Python 3.12 or later; Nsight Operator User Guide)"
    )


def _injector(config: Config) -> list[Prerequisite]:
    target = eks_settings(config)
    chart = target.charts[target.injector]
    if target.injector == "operator-26":
        namespace = quote(target.operator_namespace)
        found = [
            (
                f"Nsight Operator 26.x: release {target.release} in namespace "
                f"{target.operator_namespace}, its injector Running",
                f"helm status {quote(target.release)} --namespace {namespace} && kubectl get "
                f"pods --namespace {namespace} -l app.kubernetes.io/name=nsight-injector",
                f"./install-injector.sh installs it: Helm chart {chart} (NGC, nvidia/devtools; "
                f"{OPERATOR_DOCS})",
            ),
            (
                "the Nsight Operator CLI, nsight_operator.py (capture-window.sh, "
                "fetch-reports.sh and upgrade-injector.sh run it)",
                'ls "${NSIGHT_OPERATOR_CLI:-nsight_operator.py}" || command -v nsight_operator.py',
                cli_source(config) + "; put it here, on PATH, or name it in NSIGHT_OPERATOR_CLI",
            ),
        ]
        if target.profile_config == "resource":
            found.append(
                (
                    "the NsightOperatorProfileConfig CRD (profile-config.yaml)",
                    "kubectl get crd nsightoperatorprofileconfigs.nvidia.com",
                    f"the chart's CRDs (26.3 or later): ./install-injector.sh, {chart}",
                )
            )
        if config.capture.s3_uri:
            found.append(
                (
                    f"Secret {target.storage_secret} (the bucket's storage-config.yaml)",
                    f"kubectl get secret {quote(target.storage_secret)} --namespace {namespace}",
                    "./storage-secret.sh makes it from your AWS_* variables, before "
                    "./install-injector.sh",
                )
            )
        return found
    name = "DevTools sidecar injector" if target.injector == "sidecar" else "Nsight Operator 1.x"
    return [
        (
            f"{name}: release {target.release} and its mutating webhook",
            f"helm status {quote(target.release)} && kubectl get mutatingwebhookconfigurations",
            f"./install-injector.sh installs it: Helm chart {chart} (NGC, nvidia/devtools)",
        )
    ]


def _job_api(config: Config) -> list[Prerequisite]:
    target = eks_settings(config)
    if target.job == "pytorchjob":
        return [
            (
                "the Kubeflow Training Operator (v1) and its PyTorchJob CRD",
                "kubectl get crd pytorchjobs.kubeflow.org",
                "Kubeflow Training Operator v1.9 (github.com/kubeflow/training-operator): "
                'kubectl apply --server-side -k "github.com/kubeflow/training-operator.git/'
                'manifests/overlays/standalone?ref=v1.9.0"',
            )
        ]
    version = target.trainer_version
    if target.runtime_kind == "ClusterTrainingRuntime":
        runtime = f"kubectl get clustertrainingruntime {quote(target.runtime)}"
        made = "Kubeflow Trainer's default runtimes (installed with it)"
        if target.runtime != "torch-distributed":
            made = "yours (a runtime of torch-distributed's shape)"
    else:
        runtime = (
            f"kubectl get trainingruntime {quote(target.runtime)} "
            f"--namespace {quote(target.namespace)}"
        )
        made = "yours, in the job's namespace (a runtime of torch-distributed's shape)"
    return [
        (
            f"Kubeflow Trainer {version} (the TrainJob CRD, and JobSet, which runs a TrainJob)",
            "kubectl get crd trainjobs.trainer.kubeflow.org jobsets.jobset.x-k8s.io && "
            "kubectl get deployments -A -o jsonpath='{..image}' | tr ' ' '\\n' "
            "| grep trainer-controller-manager",
            f"Kubeflow Trainer v{version}.x (github.com/kubeflow/trainer, its Helm chart or "
            "manifests; the image tag shows the version: target.trainer_version says which "
            "one the TrainJob is written for)",
        ),
        (
            f"the {target.runtime_kind} {target.runtime}, with a replicated job "
            f"{target.runtime_job} whose container is node",
            runtime + " -o jsonpath='{.spec.template.spec.replicatedJobs[*].name}'",
            made,
        ),
    ]


def _nodes(config: Config) -> list[Prerequisite]:
    cluster = config.cluster
    columns = (
        "NAME:.metadata.name,GPU:.status.allocatable.nvidia\\.com/gpu,"
        "EFA:.status.allocatable.vpc\\.amazonaws\\.com/efa"
    )
    found = [
        (
            f"{cluster.nodes} node(s) of {cluster.instance_type}, each with "
            f"{cluster.gpus_per_node} allocatable nvidia.com/gpu"
            + (f" and {cluster.efa_devices} vpc.amazonaws.com/efa" if cluster.efa_devices else ""),
            "kubectl get nodes -l "
            + quote(f"node.kubernetes.io/instance-type={cluster.instance_type}")
            + f" -o custom-columns={quote(columns)}",
            "your node group (EKS managed node group or Karpenter); the resources come from "
            "the device plugins below",
        ),
        (
            "the NVIDIA device plugin (nvidia.com/gpu)",
            "kubectl get daemonsets -A | grep -i nvidia-device-plugin",
            "the EKS accelerated AMIs with the nvidia-device-plugin Helm chart "
            "(github.com/NVIDIA/k8s-device-plugin), or the NVIDIA GPU Operator",
        ),
    ]
    if cluster.efa_devices:
        found.append(
            (
                "the EFA device plugin (vpc.amazonaws.com/efa)",
                "kubectl get daemonsets -A | grep -i efa",
                "the aws-efa-k8s-device-plugin Helm chart (aws.github.io/eks-charts), on nodes "
                "launched with EFA interfaces",
            )
        )
    return found


def _storage(config: Config) -> list[Prerequisite]:
    target = eks_settings(config)
    found: list[Prerequisite] = []
    if mounts_shared_fs(config):
        uses = []
        if script_place(config) == "volume" and target.manifest is None:
            uses.append("the training script")
        if reports_on_volume(config):
            uses.append("the reports")
        found.append(
            (
                f"PersistentVolumeClaim {target.reports_pvc} in namespace {target.namespace}, "
                'which must print Bound ["ReadWriteMany"] (every pod mounts it at '
                f"{config.cluster.shared_fs}, for {' and '.join(uses)})",
                f"kubectl get pvc {quote(target.reports_pvc)} --namespace "
                f"{quote(target.namespace)} -o "
                + quote("jsonpath={.status.phase} {.spec.accessModes}"),
                "the FSx for Lustre CSI driver (aws-fsx-csi-driver) and a PersistentVolume and "
                "claim of yours bound to the file system (target.reports_pvc names it)",
            )
        )
    if target.manifest is not None:
        return found
    script = script_path(config)
    if script_place(config) == "volume":
        found.append(
            (
                f"the training script {script} on the shared file system (check on a host "
                f"that mounts it at {config.cluster.shared_fs})",
                f"ls -l {quote(script)}",
                "your copy: the claim's root is what the pods see at cluster.shared_fs",
            )
        )
    elif script_place(config) == "image":
        image = config.workload.container_image or "IMAGE"
        found.append(
            (
                f"the training script {script} in the image",
                f"docker run --rm --entrypoint ls {quote(image)} -l {quote(script)}",
                "your image (workload.container_image): the pods mount no file system there",
            )
        )
    for variable, ref in sorted(target.secret_env.items()):
        found.append(
            (
                f"Secret {ref['secret']} with key {ref['key']} (for {variable})",
                # describe lists the keys and their sizes, never the values.
                f"kubectl describe secret {quote(ref['secret'])} --namespace "
                f"{quote(target.namespace)}",
                "yours (target.secret_env)",
            )
        )
    return found


def _image(config: Config) -> list[Prerequisite]:
    """The process the injector matches: nothing is recorded unless the image's torchrun starts
    as the pattern says (an image whose torchrun runs under /usr/bin/python or from conda is
    missed in silence). The check runs the image locally and prints its torchrun's path and
    interpreter line."""
    target = eks_settings(config)
    image = config.workload.container_image
    if image is None or target.injection_match is not None:
        return []
    expected = f"{target.torchrun_path} and #!{target.torchrun_interpreter}"
    probe = 'command -v torchrun; head -n 1 "$(command -v torchrun)"'
    return [
        (
            f"the image's torchrun starts as {target.torchrun_interpreter} "
            f"{target.torchrun_path} (the injector's injectionMatch; else nothing is recorded): "
            f"the check prints {expected}",
            f"docker run --rm --entrypoint sh {quote(image)} -c {quote(probe)}",
            "your image; where it differs, set target.torchrun_path and "
            "target.torchrun_interpreter to what the check prints",
        )
    ]


def prerequisites(config: Config) -> tuple[Prerequisite, ...]:
    """Everything the job needs on the cluster, in the order one installs it."""
    return (
        *_nodes(config),
        *_job_api(config),
        *_injector(config),
        *_image(config),
        *_storage(config),
    )
