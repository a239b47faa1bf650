"""Rules only EKS has (semantic problems, exit 2) and its own lint, NSG014."""

from __future__ import annotations

from collections.abc import Iterator

from nsysgen.errors import Issue
from nsysgen.model import Config
from nsysgen.profile.plan_types import JobEnv, Lint, ProfilePlan
from nsysgen.shipped.step_window.names import RANKS
from nsysgen.targets.eks.injection import (
    injection_issues,
)
from nsysgen.targets.eks.names import (
    DNS_1035,
    POD_VAR,
    chosen_nodes,
    eks_settings,
    longest_pod_name,
    report_subpath,
    reports_on_volume,
    script_path,
    script_place,
    shadowing_mount,
)
from nsysgen.targets.eks.own import manifest_issues
from nsysgen.units import human_bytes, human_seconds

# Kubeflow Trainer 2.4 refuses runtimes whose replicated job names are longer (release notes).
TRAINER_24_JOB_NAME_MAX = 20
# A pod's grace period where nothing sets it (Kubernetes' default).
DEFAULT_GRACE_S = 30


def job_kind(config: Config) -> str:
    return "TrainJob" if eks_settings(config).job == "trainjob" else "PyTorchJob"


def checks(config: Config, env: JobEnv) -> Iterator[Issue]:
    """`env`: the job's environment (nsysgen/profile/environment.py)."""
    workload = config.workload
    target = eks_settings(config)
    if not config.setup.pytorch_job:
        yield Issue(
            "workload.kind",
            f"target eks runs PyTorch jobs with one torchrun per pod; "
            f"{workload.kind!r} is not one (allowed: workload=fsdp)",
        )
        return
    if not workload.container_image:
        yield Issue(
            "workload.container_image",
            "target eks needs the image your trainer pods run, which nsysgen cannot know: add "
            "workload.container_image=IMAGE (allowed: an image reference in your registry, "
            "e.g. <account>.dkr.ecr.<region>.amazonaws.com/fsdp:tag)",
        )
    if not DNS_1035.match(config.job.name):
        yield Issue(
            "job.name",
            f"{config.job.name!r} is not a {job_kind(config)} name (allowed: a "
            "DNS-1035 label: lower-case letters, digits and '-', starting with a letter)",
        )
    yield from _split_args(config)
    yield from _rank_issues(config)
    yield from _volume_issues(config, env)
    yield from _trainer_issues(config)
    if target.manifest is not None:
        yield from manifest_issues(config)
    coordinated = target.injector == "operator-26" and target.coordinator is True
    if coordinated and config.capture.mode != "window":
        yield Issue(
            "target.coordinator",
            f"capture={config.capture.mode}: the program opens the window itself, which "
            "Coordinator Mode would leave to the coordinator (allowed: auto or false, or "
            "capture=window)",
        )
    yield from injection_issues(config)
    yield from _operator_cuda_trace(config)


def _operator_cuda_trace(config: Config) -> Iterator[Issue]:
    """Nsight Operator 26.x brings its own nsys (2026.x), whose --trace=cuda is the hardware
    trace on Blackwell; with a catalog version that says otherwise nsysgen would not write
    cuda-sw for it, and windowed captures there came back without kernels."""
    if eks_settings(config).injector != "operator-26" or not config.cluster.blackwell:
        return
    if config.nsight.blackwell_cuda_trace != "hardware":
        yield Issue(
            "nsight.version",
            f"Nsight Operator 26.x runs its own nsys 2026.x, which traces CUDA in hardware on "
            f"{config.cluster.gpu_model}; nsys {config.nsight.version}'s catalog entry does "
            "not, so the CUDA trace would not be chosen for it (allowed: nsight=2026.4.1)",
        )


def _volume_issues(config: Config, env: JobEnv) -> Iterator[Issue]:
    """The injectors that write to the shared volume need the report folder on it: the pods
    mount a folder of it by its path relative to the volume."""
    if not reports_on_volume(config):
        return
    shared, reports = config.cluster.shared_fs, config.capture.report_dir
    relative = report_subpath(config) if reports.startswith("/") else ".."
    if relative.startswith(".."):  # NSG007 too, unless switched off
        yield Issue(
            "capture.report_dir",
            f"{reports!r} is not a folder inside the shared volume mounted at {shared!r} "
            f"(cluster.shared_fs), where {eks_settings(config).injector} writes reports "
            f"(allowed: a folder under {shared}/, e.g. {shared}/nsight-reports/{config.job.name})",
        )
    placeholder = next((c for c in "%{}" if c in reports), None)
    if placeholder:
        # The kubelet creates the folder by this name; nsys would expand % in --output and
        # the injector {..}: nsys would write to another folder, which nobody created.
        yield Issue(
            "capture.report_dir",
            f"{reports!r} holds {placeholder!r}: the pods' mounts create the report folder by "
            "its literal name, and nsys or the injector would expand it into another "
            "(allowed: a plain folder; per-pod parts go in capture.report_name)",
        )
    pod_var = env.get(POD_VAR)
    if pod_var is not None:
        yield Issue(
            pod_var.key,
            f"{POD_VAR} is nsysgen's own (the pod's name, for its TMPDIR folder on the "
            "volume) (allowed: any other name)",
        )
    pod, limit = longest_pod_name(config)
    if len(pod) > limit:
        yield Issue(
            "job.name",
            f"{config.job.name!r} makes pod names such as {pod!r} ({len(pod)} characters), "
            f"which Kubernetes cuts at {limit}: verify could not find each pod's folder "
            f"(allowed: a job name {len(pod) - limit} characters shorter)",
        )


def _trainer_issues(config: Config) -> Iterator[Issue]:
    target = eks_settings(config)
    if target.job != "trainjob":
        return
    name = target.runtime_job
    if target.trainer_version == "2.4" and len(name) > TRAINER_24_JOB_NAME_MAX:
        yield Issue(
            "target.runtime_job",
            f"{name!r} has {len(name)} characters; Kubeflow Trainer 2.4 limits a runtime's "
            f"replicated job names to {TRAINER_24_JOB_NAME_MAX} (allowed: the name of the "
            "runtime's job, at most 20 characters, or target.trainer_version=2.3 or 2.2)",
        )


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


def _every_pod_under_nsys(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if eks_settings(config).job != "trainjob":
        return
    pods = config.cluster.nodes
    chosen = chosen_nodes(config)
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
            f"only the {recording} pod(s) of {RANKS} open the window; the other "
            f"{pods - recording} pay the injection too: {cost}",
        )


EVERY_POD_LINT = Lint(
    "NSG014",
    "a TrainJob runs every pod under nsys, also those whose ranks do not record",
    "accept the cost, record every node, or use target.job=pytorchjob to label only some pods",
    "warning",
    _every_pod_under_nsys,
)


def _patched_image(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if plan.facts.steps.method != "patch":
        return
    if script_place(config) == "volume" and eks_settings(config).manifest is None:
        # The pods run the script from the shared file system: no image to rebuild.
        yield (
            "capture.step_method",
            "the step window needs the patched training script inside the pods: nsysgen wrote "
            f"the patch (see README); apply it to {script_path(config)} on the shared file "
            "system, which every pod mounts",
        )
        return
    yield (
        "capture.step_method",
        "the step window needs the patched training script inside the pods: nsysgen wrote the "
        "patch (see README), but the pods run the script of "
        f"{config.workload.container_image or 'the image'}, which must be rebuilt with it",
    )


PATCHED_IMAGE_LINT = Lint(
    "NSG019",
    "a training-loop patch reaches EKS pods only in a rebuilt image",
    "rebuild and push the image with the patched script, or use capture.step_method=hook "
    "(zero-patch: the helper reaches the pods through a ConfigMap, nothing to rebuild)",
    "warning",
    _patched_image,
)


def _grace_unpatchable(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    target = eks_settings(config)
    if target.job != "trainjob" or target.trainer_version != "2.2":
        return
    need = plan.teardown.write_s
    configured = target.termination_grace_period_s
    dropped = (
        f" (target.termination_grace_period_s={configured} cannot reach them)"
        if configured is not None
        else ""
    )
    yield (
        "target.trainer_version",
        f"Kubeflow Trainer 2.2's runtimePatches cannot set terminationGracePeriodSeconds, so "
        f"the pods get the runtime's ({DEFAULT_GRACE_S} s unless it sets one){dropped}; nsys "
        "needs about "
        f"{human_seconds(need)} to write a report of ~{human_bytes(plan.size.bytes_per_report)} "
        "after the "
        "deadline's SIGTERM, or the report is cut off",
    )


GRACE_LINT = Lint(
    "NSG020",
    "Trainer 2.2 cannot give the pods time to write their reports",
    "set terminationGracePeriodSeconds in the runtime's pod template, or use Trainer 2.3 or "
    "later (target.trainer_version)",
    "warning",
    _grace_unpatchable,
)


def _script_uncertain(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    """torchrun fails at start when the script is not where the pod looks: nsysgen mounts the
    shared file system for a script under cluster.shared_fs and takes any other absolute path
    to be in the image; for the rest it cannot tell."""
    if eks_settings(config).manifest is not None or script_place(config) != "unknown":
        return  # a job of the user's own runs its script as it always did
    if not script_path(config):
        return  # not a script workload: checks refuse it
    script, key = script_path(config), f"workload.{config.workload.kind}.script"
    hidden = shadowing_mount(config)
    if hidden is not None:
        yield (
            key,
            f"{script!r} is under {hidden}, which the pods mount over (nsysgen's own mount): "
            "the image's file there is hidden, and torchrun would find no script",
        )
        return
    yield (
        key,
        f"{script!r} is a relative path: torchrun looks for it in the image's working "
        f"directory, which nsysgen cannot see; it mounts {config.cluster.shared_fs} only for a "
        "script under it",
    )


SCRIPT_PLACE_LINT = Lint(
    "NSG025",
    "the pods may not find the training script",
    "give the script's absolute path: under cluster.shared_fs (the pods mount the "
    "target.reports_pvc claim there) or in the image (workload.container_image)",
    "warning",
    _script_uncertain,
)
