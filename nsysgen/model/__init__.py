"""model: a validated config dict -> typed, frozen objects.

The schema has already checked shapes and types, so this module only converts; plan and render
code use attributes, never dict keys. The `workload.<kind>` and `target` blocks are typed by
their plug-ins (`nsysgen.profile.workloads.registry.WORKLOADS`, `nsysgen.targets.TARGETS`):
each kind has its own frozen settings dataclass, a subclass of `WorkloadSettings` /
`TargetSettings`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# The plug-ins' blocks, re-exported: every plug-in imports them from here.
from nsysgen.model.blocks import Block as Block
from nsysgen.model.blocks import TargetSettings as TargetSettings
from nsysgen.model.blocks import WorkloadSettings as WorkloadSettings
from nsysgen.model.blocks import settings_as as settings_as
from nsysgen.model.blocks import typed_block as typed_block
from nsysgen.model.setup import Setup, resolve

RankPolicy = Literal["one_per_node", "all"]
Launch = Literal["per_gpu", "per_node"]
CaptureMode = Literal["window", "steps", "nvtx"]
Severity = Literal["error", "warning", "off"]


# Blackwell data-centre GPUs as cluster.gpu_model names them.
_BLACKWELL = re.compile(r"^G?B[1-3]00\b", re.I)


@dataclass(frozen=True)
class SourceSettings(WorkloadSettings):
    """A workload whose training script nsysgen may read (capture=steps): its step loop and
    the counter that numbers its steps, read by the step helper while the program runs."""

    source: str | None  # the script in this repository (nsysgen.profile.inputs reads it)
    loop_line: int | None
    step_expr: str | None


@dataclass(frozen=True)
class ScriptSettings(SourceSettings):
    """A script the workload runs, whose source may be patched for capture=steps."""

    script: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class EnvDefault:
    """A variable nsysgen sets by default (`cluster.env_defaults`, `workload.env_defaults`)."""

    value: str
    reason: str  # why, for the generated README
    efa_only: bool = False  # only on clusters with EFA devices


# NAME -> its default, or None where the config removed it (NAME: null); sorted by name.
EnvDefaults = tuple[tuple[str, EnvDefault | None], ...]


@dataclass(frozen=True)
class Cluster:
    name: str
    instance_type: str
    gpu_model: str
    gpus_per_node: int
    efa_devices: int
    nodes: int
    partition: str | None
    shared_fs: str
    nsight_root: str
    container_runtime: str
    slurm_platform: str
    slurm_gres: bool
    slurm_mpi: str | None
    env: tuple[tuple[str, str], ...]
    nvlink_GBps: float | None = None  # NVLink bandwidth per GPU and direction
    efa_Gbps: float | None = None  # EFA bandwidth of a node, all its devices
    env_defaults: EnvDefaults = ()

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def blackwell(self) -> bool:
        """A Blackwell data-centre GPU (B100, B200, B300, GB200, GB300): where nsys 2026.x's
        --trace=cuda is the hardware trace (nsysgen/profile/cuda_trace.py)."""
        return bool(_BLACKWELL.match(self.gpu_model))


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str
    launch: Launch
    container_image: str | None
    settings: WorkloadSettings  # the block named after `kind` (nccl, nemo, fsdp, python)
    step_seconds: float  # assumptions for size estimates (workload.estimate)
    kernels_per_second: float
    env_defaults: EnvDefaults = ()
    collective_timeout_s: int | None = None  # set in the program's code; None: not stated


@dataclass(frozen=True)
class Capture:
    mode: CaptureMode
    ranks: tuple[int, ...] | RankPolicy
    trace: tuple[str, ...]
    sample: str
    cpuctxsw: str
    efa_metrics: bool
    gpu_metrics: bool
    report_dir: str
    report_name: str | None
    recipes: tuple[str, ...] | str  # "auto", or recipe names
    pace_kernels: tuple[str, ...]
    extra_args: tuple[str, ...]
    delay: int | None = None
    duration: int | None = None
    first_step: int | None = None
    last_step: int | None = None
    step_method: str | None = None  # auto | hook | patch | native (capture=steps)
    optimizer_steps: int | None = None  # optimizer steps that make one training step
    nvtx_range: str | None = None
    nvtx_domain: str | None = None
    s3_uri: str | None = None  # reports are copied there after the run
    cuda_trace: str = "auto"  # auto | software | hardware (nsysgen/profile/cuda_trace.py)
    nccl_trace: tuple[str, ...] = ()  # --nccl-trace values; () = off
    pytorch: tuple[str, ...] = ()  # --pytorch values; () = off

    @property
    def delay_s(self) -> int:
        """Seconds from launch to the start of a window capture (0: at launch, and for the
        other modes); every reader of the delay reads it here."""
        return self.delay or 0


@dataclass(frozen=True)
class Nsight:
    version: str
    full_version: str
    install_method: str
    install_urls: tuple[str, ...]
    package_prefix: str
    create_dirs: tuple[str, ...]
    nsys_relpath: str
    importer_relpath: str
    plugins: dict[str, tuple[str, ...]]
    gpu_metrics_flag: str
    gpu_metrics_node_value: str | None
    cuda_event_trace: bool
    trace_values: tuple[str, ...]
    recipes: tuple[str, ...]
    tested: bool = True  # False: built from NVIDIA's documentation, never run by the tests
    sources: tuple[str, ...] = ()
    pytorch_values: tuple[str, ...] = ()
    nccl_trace_values: tuple[str, ...] = ()  # advanced NCCL tracing (--nccl-trace)
    blackwell_cuda_trace: str = "software"  # what --trace=cuda records on Blackwell


@dataclass(frozen=True)
class TargetConfig:
    name: str
    settings: TargetSettings


@dataclass(frozen=True)
class Job:
    name: str
    time_limit_min: int


@dataclass(frozen=True)
class Lints:
    severity: dict[str, Severity]
    max_profiled_ranks: int


@dataclass(frozen=True)
class Analysis:
    """The `analysis` block as written (None: derived, nsysgen/profile/analysis_job.py)."""

    nodes: int | None = None
    workers_per_node: int | None = None
    worker_memory_gb: int | None = None
    time_limit_min: int | None = None
    python: str = "python3"


@dataclass(frozen=True)
class TrainingPatch:
    """The workload's own script as nsysgen read it: what it found there, and the patch
    (capture.step_method=patch) or what the zero-patch helper reads (hook)."""

    source: str  # workload.<kind>.source as configured (relative to the working directory)
    sha256: str  # of the script as read
    diff: str  # the unified diff that adds the step window ("" without a patch)
    detected: tuple[tuple[str, str], ...] = ()  # what was found, for plan and the README
    at_step: str | None = None  # the script's step number, read while the optimizer steps
    scope: str = ""  # where at_step is read: "<file name>:<function>"
    # A library's loop: the number its counter gives the first step, and the library's name.
    library_first: int | None = None
    library: str = ""


@dataclass(frozen=True)
class Config:
    cluster: Cluster
    workload: Workload
    capture: Capture
    target: TargetConfig
    nsight: Nsight
    job: Job
    output_dir: str
    lints: Lints
    setup: Setup  # what the rest implies, decided once here (model/setup.py)
    # Every composed value at its config path, for checks that must see all of them (secrets).
    values: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # The training script's step-window patch (nsysgen.profile.inputs), read during validation.
    training_patch: TrainingPatch | None = None
    analysis: Analysis = field(default_factory=Analysis)

    @property
    def nsys_path(self) -> str:
        return f"{self.cluster.nsight_root}/{self.nsight.nsys_relpath}"

    @property
    def importer_path(self) -> str:
        return f"{self.cluster.nsight_root}/{self.nsight.importer_relpath}"


def from_dict(
    data: dict[str, Any],
    workload_settings: Mapping[str, Callable[[Block], WorkloadSettings]],
    target_settings: Mapping[str, Callable[[Block], TargetSettings]],
    auto_windows: Mapping[str, tuple[int, int]] | None = None,
    step_methods: Mapping[str, tuple[str, ...]] | None = None,
    pytorch_jobs: frozenset[str] = frozenset(),
) -> Config:
    """Convert a schema-valid composed config into typed objects. The `workload.<kind>` and
    `target` blocks are typed by their registries' parsers; `auto` windows and step methods
    are each workload's (the pipeline passes them in), and the setup is resolved once."""
    workload, target = data["workload"], data["target"]
    kind = workload["kind"]
    cluster = cluster_from(data["cluster"])
    capture = capture_from(data["capture"], (auto_windows or {}).get(kind, AUTO_WINDOW_TRAINING))
    methods = (step_methods or {}).get(kind, ())
    return Config(
        cluster=cluster,
        workload=workload_from(workload, workload_settings[kind](workload[kind])),
        capture=capture,
        target=TargetConfig(name=target["name"], settings=target_settings[target["name"]](target)),
        nsight=nsight_from(data["nsight"]),
        job=Job(name=data["job"]["name"], time_limit_min=data["job"]["time_limit_min"]),
        output_dir=data["output_dir"],
        lints=Lints(
            severity=dict(data["lints"]["severity"]),
            max_profiled_ranks=data["lints"]["max_profiled_ranks"],
        ),
        setup=resolve(
            workload["launch"], cluster.gpus_per_node, capture, methods, kind in pytorch_jobs
        ),
        values=data,
        analysis=Analysis(**data["analysis"]) if "analysis" in data else Analysis(),
    )


def cluster_from(c: Block) -> Cluster:
    return Cluster(
        name=c["name"],
        instance_type=c["instance_type"],
        gpu_model=c["gpu_model"],
        gpus_per_node=c["gpus_per_node"],
        efa_devices=c["efa_devices"],
        nodes=c["nodes"],
        partition=c["partition"],
        shared_fs=c["shared_fs"],
        nsight_root=c["nsight_root"].rstrip("/"),
        container_runtime=c["container_runtime"],
        slurm_platform=c["slurm"]["platform"],
        slurm_gres=c["slurm"]["gres"],
        slurm_mpi=c["slurm"]["mpi"],
        env=tuple(sorted(c["env"].items())),
        nvlink_GBps=c.get("network", {}).get("nvlink_GBps"),
        efa_Gbps=c.get("network", {}).get("efa_Gbps"),
        env_defaults=env_defaults_from(c.get("env_defaults", {})),
    )


def env_defaults_from(block: Block) -> EnvDefaults:
    return tuple(
        (name, None if entry is None else EnvDefault(**entry))
        for name, entry in sorted(block.items())
    )


def workload_from(w: Block, settings: WorkloadSettings) -> Workload:
    return Workload(
        name=w["name"],
        kind=w["kind"],
        launch=w["launch"],
        container_image=w["container_image"],
        settings=settings,
        step_seconds=float(w["estimate"]["step_seconds"]),
        kernels_per_second=float(w["estimate"]["kernels_per_second"]),
        env_defaults=env_defaults_from(w.get("env_defaults", {})),
        collective_timeout_s=w.get("collective_timeout_s"),
    )


# capture.delay/duration `auto` where the workload says nothing else (its plug-in's
# auto_window, which the pipeline passes in): training skips its start-up and records a minute.
AUTO_WINDOW_TRAINING = (30, 60)


def _window_value(value: Any, auto: tuple[int, int], index: int) -> int | None:
    if value != "auto":
        return value  # type: ignore[no-any-return]
    return auto[index]


def capture_from(cap: Block, auto: tuple[int, int] = AUTO_WINDOW_TRAINING) -> Capture:
    ranks = cap["ranks"]
    return Capture(
        mode=cap["mode"],
        ranks=tuple(ranks) if isinstance(ranks, list) else ranks,
        trace=tuple(cap["trace"]),
        sample=cap["sample"],
        cpuctxsw=cap["cpuctxsw"],
        efa_metrics=cap["efa_metrics"],
        gpu_metrics=cap["gpu_metrics"],
        report_dir=cap["report_dir"].rstrip("/") or "/",
        report_name=cap["report_name"],
        recipes=cap["recipes"] if cap["recipes"] == "auto" else tuple(cap["recipes"]),
        pace_kernels=tuple(cap["pace_kernels"]),
        extra_args=tuple(cap["extra_args"]),
        delay=_window_value(cap.get("delay"), auto, 0),
        duration=_window_value(cap.get("duration"), auto, 1),
        first_step=cap.get("first_step"),
        last_step=cap.get("last_step"),
        step_method=cap.get("step_method"),
        optimizer_steps=cap.get("optimizer_steps"),
        nvtx_range=cap.get("nvtx_range"),
        s3_uri=cap.get("s3_uri"),
        nvtx_domain=cap.get("nvtx_domain"),
        cuda_trace=cap.get("cuda_trace", "auto"),
        nccl_trace=tuple(cap.get("nccl_trace", ())),
        pytorch=tuple(cap.get("pytorch", ())),
    )


def nsight_from(n: Block) -> Nsight:
    return Nsight(
        version=n["version"],
        full_version=n["full_version"],
        install_method=n["install"]["method"],
        install_urls=tuple(n["install"]["urls"]),
        package_prefix=n["install"]["package_prefix"],
        create_dirs=tuple(n["install"]["create_dirs"]),
        nsys_relpath=n["layout"]["nsys"],
        importer_relpath=n["layout"]["importer"],
        plugins={name: tuple(flags) for name, flags in n["plugins"].items()},
        gpu_metrics_flag=n["gpu_metrics"]["flag"],
        gpu_metrics_node_value=n["gpu_metrics"]["node_value"],
        cuda_event_trace=n["switches"]["cuda_event_trace"],
        trace_values=tuple(n["trace_values"]),
        recipes=tuple(n["recipes"]),
        tested=n.get("tested", True),
        sources=tuple(n.get("sources", ())),
        pytorch_values=tuple(n.get("pytorch_values", ())),
        nccl_trace_values=tuple(n.get("nccl_trace_values", ())),
        blackwell_cuda_trace=n.get("blackwell_cuda_trace", "software"),
    )
