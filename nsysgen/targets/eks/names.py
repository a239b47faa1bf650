"""What EKS names: pods, report files, volumes and mounts, and which pods record."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Literal

from nsysgen.model import Config, ScriptSettings, settings_as
from nsysgen.profile.plan_types import Facts, RecordedTasks, expand_name
from nsysgen.targets.eks.settings import EksSettings

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


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
# The same claim again, for nsys's TMPDIR: a container's mounts are keyed by volume name in a
# TrainJob's runtime patch, so one volume cannot be mounted twice there.
TMP_VOLUME = "nsys-tmp"


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


def coordinator_mode(config: Config) -> bool:
    """26.x Coordinator Mode: the coordinator opens a delay/duration window; the program opens
    a step or NVTX window itself (cudaProfilerApi / nvtx capture range)."""
    setting = eks_settings(config).coordinator
    return config.capture.mode == "window" if setting == "auto" else bool(setting)


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
        return chosen_nodes(config)
    labelled = profiled_replicas(config)
    return [n for n in range(nodes) if ("Master" if n == 0 else "Worker") in labelled]


NSYS_TMP = "/nsys-tmp"  # nsys's TMPDIR: writable and exec-able whatever the image's /tmp is


# Where nsys writes a capture before converting it, per pod, in the report folder on the shared
# volume (the pod's TMPDIR is mounted there with subPathExpr): a report that the pod's end cut
# off stays as a .qdstrm where fetch-reports.sh and verify find it. The verifier knows the name.
STATE_DIR = ".nsysgen"


# The pod's own name, from the downward API, for the mount's subPathExpr.
POD_VAR = "NSYSGEN_POD"


SITE_MOUNT = "/nsysgen-site"  # the zero-patch step helper, from the job's ConfigMap


SITE_VOLUME = "nsysgen-site"


SITE_CONFIGMAP_FILE = "nsysgen-site-configmap.yaml"


# The container the Trainer runs the trainer block in (its constants.Node), whatever the runtime.
TRAINER_CONTAINER = "node"


def runtime_job(config: Config) -> str:
    """The runtime's replicated job that runs torchrun (runtimePatches name it)."""
    return eks_settings(config).runtime_job


def reports_on_volume(config: Config) -> bool:
    """The injector writes reports to the shared volume (1.x and the sidecar); 26.x uploads them
    to its storage."""
    return not injector(config).names_reports


# The shared filesystem's claim where only the training script needs it (the 26.x operator
# uploads reports, so no reports volume): the pods run the script from cluster.shared_fs.
SHARED_VOLUME = "shared-fs"


ScriptPlace = Literal["volume", "image", "unknown"]


def script_path(config: Config) -> str:
    """The script torchrun runs ("" for a workload without one, which checks refuse on EKS)."""
    settings = config.workload.settings
    return settings.script if isinstance(settings, ScriptSettings) else ""


def _under(path: str, folder: str) -> bool:
    folder = posixpath.normpath(folder)
    path = posixpath.normpath(path)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def shadowing_mount(config: Config) -> str | None:
    """A folder the pod mounts over, hiding the image's files there, that holds the script."""
    script = script_path(config)
    if not script:
        return None
    return next((m for m in ("/dev/shm", NSYS_TMP, SITE_MOUNT) if _under(script, m)), None)


def script_place(config: Config) -> ScriptPlace:
    """Where the pods find the training script torchrun runs: on the shared filesystem (the
    claim is mounted at cluster.shared_fs), in the image (an absolute path elsewhere), or
    unknown (a relative path is resolved in the image's working directory, which nsysgen cannot
    see; a path under a folder the pod mounts over is not the image's)."""
    script = script_path(config)
    if not script.startswith("/") or shadowing_mount(config) is not None:  # "" too
        return "unknown"
    return "volume" if _under(script, config.cluster.shared_fs) else "image"


def mounts_shared_fs(config: Config) -> bool:
    """nsysgen's own job mounts the shared filesystem's claim: for the reports (1.x, sidecar)
    or for the script (26.x with the script on it). A job of the user's own runs its script as
    it always did: the patch adds only what profiling needs."""
    if reports_on_volume(config):
        return True
    return eks_settings(config).manifest is None and script_place(config) == "volume"


def pod_selector(config: Config) -> str:
    """A label selector for every pod of the job: nsysgen's `app` label on its own job, the
    controller's job-name label on the user's (JobSet's for a TrainJob, which runs as a JobSet of
    the same name; the Training Operator's for a PyTorchJob)."""
    name = config.job.name
    target = eks_settings(config)
    if target.manifest is None:
        return f"app={name}"
    if target.job == "trainjob":
        return f"jobset.sigs.k8s.io/jobset-name={name}"
    return f"training.kubeflow.org/job-name={name}"


def report_subpath(config: Config) -> str:
    """The report folder relative to the shared volume's mount (checks refuse one outside)."""
    return posixpath.relpath(config.capture.report_dir, config.cluster.shared_fs)


# Kubernetes cuts a generated pod name (JobSet's pods: <job>-<index>- and a random suffix) to
# this many characters before the suffix; a pod name is a DNS label of at most 63.
GENERATED_NAME_MAX = 58
POD_NAME_MAX = 63


def longest_pod_name(config: Config) -> tuple[str, int]:
    """The longest pod name of the job (without JobSet's random suffix) and its limit."""
    last = config.cluster.nodes - 1
    if eks_settings(config).job == "trainjob":
        return f"{_pod_name(config, last)}-", GENERATED_NAME_MAX
    return _pod_name(config, last), POD_NAME_MAX


def state_pods(config: Config) -> list[str]:
    """The pod name of node 0, and a format of the others' ({node}: the node index, {worker}:
    the Worker replica's): the verifier finds each pod's folder under STATE_DIR by it (JobSet
    pods carry a random suffix after it). Job and job names are DNS labels: no braces."""
    name = config.job.name
    if eks_settings(config).job == "trainjob":
        return [_pod_name(config, 0), f"{name}-{runtime_job(config)}-0-{{node}}"]
    return [_pod_name(config, 0), f"{name}-worker-{{worker}}"]


def chosen_nodes(config: Config) -> list[int]:
    ranks = config.capture.ranks
    if isinstance(ranks, str):
        return list(range(config.cluster.nodes))
    return sorted({rank // config.cluster.gpus_per_node for rank in ranks})


def _pod_name(config: Config, node: int) -> str:
    if eks_settings(config).job == "trainjob":
        # JobSet: <job>-<replicated job>-<job#>-<pod#> (and a random suffix)
        return f"{config.job.name}-{runtime_job(config)}-0-{node}"
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


def recorded(config: Config, facts: Facts) -> RecordedTasks:
    """One report per recording pod (a pod is a node): every node as a range when all record
    (names expand on request), else the chosen few as a list."""
    collectors = bool(facts.collector_args)

    def name_of(task: int, node: int, local: int) -> str:
        return report_name(config, node)

    def collects(task: int, node: int, local: int) -> bool:
        return collectors

    nodes = recording_nodes(config)
    if len(nodes) == config.cluster.nodes:
        return RecordedTasks(1, "node", name_of, collects, 0, len(nodes), locals_=(0,))
    listed = tuple((node, node, 0) for node in nodes)
    return RecordedTasks(1, "node", name_of, collects, listed=listed)
