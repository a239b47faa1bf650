"""Cross-field rules the JSON Schemas cannot express, reported in the same Issue shape."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import yaml

from nsysgen.errors import Issue
from nsysgen.model import Config, ScriptSettings
from nsysgen.profile.cuda_trace import trace_values
from nsysgen.profile.pause import minutes, timeout_argument
from nsysgen.profile.workloads.command import CommandSettings
from nsysgen.profile.workloads.registry import workload_kind
from nsysgen.resources import CONF_DIR

Check = Callable[[Config], Iterator[Issue]]

# Switches that would only repeat or contradict the plan outright; others (--duration, --kill,
# --enable, ...) pass through, and the lints judge what they would do.
_OWNED_SWITCHES = (
    "--trace",
    "-t",
    "--sample",
    "-s",
    "--cpuctxsw",
    "--delay",
    "-y",
    "--capture-range",
    "-c",
    "--nvtx-capture",
    "-p",
    "--output",
    "-o",
    "--force-overwrite",
    "-f",
)
# Recipes with required arguments (a kernel or range name, two inputs).
_RECIPES_NEEDING_ARGUMENTS = ("cuda_gpu_kern_pace", "nvtx_pace", "nvtx_gpu_proj_pace", "diff")


def _ranks_in_world(config: Config) -> Iterator[Issue]:
    ranks = config.capture.ranks
    world = config.cluster.world_size
    if not isinstance(ranks, tuple):
        return
    for index, rank in enumerate(ranks):
        if rank >= world:
            yield Issue(
                f"capture.ranks[{index}]",
                f"rank {rank} is outside the world size {world} "
                f"({config.cluster.nodes} nodes x {config.cluster.gpus_per_node} GPUs) "
                f"(allowed: 0..{world - 1})",
            )


def _collectors_supported(config: Config) -> Iterator[Issue]:
    capture, cluster, nsight = config.capture, config.cluster, config.nsight
    if capture.efa_metrics and cluster.efa_devices == 0:
        yield Issue(
            "capture.efa_metrics",
            f"cluster {cluster.name} ({cluster.instance_type}) has no EFA devices (allowed: false)",
        )
    if capture.efa_metrics and "efa_metrics" not in nsight.plugins:
        yield Issue(
            "capture.efa_metrics",
            f"nsys {nsight.version} has no efa_metrics plugin (allowed: false, or an nsight "
            f"version >= 2024.3 such as nsight=2024.4.1 or nsight=2025.3.1)",
        )
    if capture.gpu_metrics and nsight.gpu_metrics_node_value is None:
        yield Issue(
            "capture.gpu_metrics",
            f"nsys {nsight.version} ({nsight.gpu_metrics_flag}) cannot sample every GPU of a node "
            f"from one rank (allowed: false, or nsight=2025.3.1)",
        )


def _step_window(config: Config) -> Iterator[Issue]:
    capture = config.capture
    if capture.mode != "steps":
        return
    first, last = config.setup.first_step, config.setup.last_step
    if first > last:
        yield Issue(
            "capture.first_step",
            f"first step {first} is after last step {last} "
            f"(allowed: first_step <= last_step; both steps are recorded)",
        )
    if not workload_kind(config).step_capture:
        yield Issue(
            "capture.mode",
            f"workload {config.workload.name} ({config.workload.kind}) has no training steps that "
            f"call cudaProfilerStart (allowed: window, nvtx)",
        )
    methods = workload_kind(config).step_methods
    if methods and (capture.step_method or "auto") not in ("auto", *methods):
        yield Issue(
            "capture.step_method",
            f"workload kind {config.workload.kind} cannot record steps by "
            f"{capture.step_method} (allowed: auto, {', '.join(methods)})",
        )
    native = workload_kind(config).native
    start = native.first if native is not None else 0
    if native is not None and first < native.first:
        yield Issue(
            "capture.first_step",
            f"{config.workload.kind} numbers its steps from {native.first} (allowed: "
            f"first_step >= {native.first})",
        )
    elif config.setup.step_method == "hook" and first <= start:
        yield Issue(
            "capture.first_step",
            "the zero-patch helper sees where a step ends (its optimizer step), so the first "
            f"step of a run has no start it can record (allowed: first_step >= {start + 1}, or "
            "capture.step_method=patch)",
        )
    settings = config.workload.settings
    # Zero-patch reads step_expr in the step loop's function while the optimizer steps: it
    # needs the source to know that function.
    source = getattr(settings, "source", None)
    if config.setup.step_method == "hook" and getattr(settings, "step_expr", None) and not source:
        yield Issue(
            f"workload.{config.workload.kind}.step_expr",
            "the zero-patch helper reads step_expr in the step loop's function while the "
            "optimizer steps, and knows that function from the script's source (allowed: null, "
            f"or workload.{config.workload.kind}.source set, or capture.step_method=patch)",
        )
    if not config.setup.traces_cuda:
        yield Issue(
            "capture.trace",
            "capture by steps (cudaProfilerApi) needs 'cuda' traced (allowed: a list with 'cuda')",
        )


# The settings each capture mode reads; the others would be silently ignored.
_MODE_SETTINGS = {
    "window": ("delay", "duration"),
    "steps": ("first_step", "last_step", "step_method", "optimizer_steps"),
    "nvtx": ("nvtx_range", "nvtx_domain"),
}


def _launch_supported(config: Config) -> Iterator[Issue]:
    workload = config.workload
    launches = workload_kind(config).launches
    if workload.launch not in launches:
        yield Issue(
            "workload.launch",
            f"workload kind {workload.kind} does not run {workload.launch} "
            f"(allowed: {', '.join(launches)})",
        )


def _settings_of_other_modes(config: Config) -> Iterator[Issue]:
    capture = config.capture
    for mode, keys in _MODE_SETTINGS.items():
        if mode == capture.mode:
            continue
        for key in keys:
            if getattr(capture, key) is not None:
                yield Issue(
                    f"capture.{key}",
                    f"capture={capture.mode} ignores {key}; only capture={mode} reads it "
                    f"(allowed: leave it unset, or choose capture={mode})",
                )


def _nvtx_traced(config: Config) -> Iterator[Issue]:
    if config.capture.mode == "nvtx" and "nvtx" not in config.capture.trace:
        yield Issue(
            "capture.trace",
            "capture by NVTX range needs 'nvtx' traced (allowed: a list with 'nvtx')",
        )


def _known_to_version(config: Config) -> Iterator[Issue]:
    nsight = config.nsight
    for field, values, known in (
        ("trace", config.capture.trace, nsight.trace_values),
        (
            "recipes",
            () if config.capture.recipes == "auto" else config.capture.recipes,
            nsight.recipes,
        ),
    ):
        for index, value in enumerate(values):
            if value not in known:
                yield Issue(
                    f"capture.{field}[{index}]",
                    f"{value!r} is not known to nsys {nsight.version} "
                    f"(allowed: {', '.join(known)})",
                )


def _switch_values_known(config: Config) -> Iterator[Issue]:
    """--nccl-trace and --pytorch values, and the CUDA trace asked for, against the version."""
    nsight, capture = config.nsight, config.capture
    for field, values, known in (
        ("nccl_trace", capture.nccl_trace, nsight.nccl_trace_values),
        ("pytorch", capture.pytorch, nsight.pytorch_values),
    ):
        for index, value in enumerate(values):
            if value not in known:
                switch = f"--{field.replace('_', '-')}"
                allowed = (
                    ", ".join(known)
                    if known
                    else f"[]: nsys {nsight.version} has no {switch}; later versions have it"
                )
                yield Issue(
                    f"capture.{field}[{index}]",
                    f"{value!r} is not known to nsys {nsight.version} (allowed: {allowed})",
                )
    if "cuda" in capture.trace:
        value = dict(zip(capture.trace, trace_values(config), strict=False))["cuda"]
        if value not in nsight.trace_values:
            yield Issue(
                "capture.cuda_trace",
                f"{capture.cuda_trace} CUDA tracing needs --trace={value}, which nsys "
                f"{nsight.version} does not know (allowed: auto)",
            )


def _recipes_runnable(config: Config) -> Iterator[Issue]:
    recipes = () if config.capture.recipes == "auto" else config.capture.recipes
    for index, recipe in enumerate(recipes):
        if recipe == "cuda_gpu_kern_pace":
            if not config.capture.pace_kernels:
                yield Issue(
                    f"capture.recipes[{index}]",
                    "cuda_gpu_kern_pace needs kernel names (allowed: set capture.pace_kernels)",
                )
        elif recipe == "nccl_straggler" and not config.capture.nccl_trace:
            yield Issue(
                f"capture.recipes[{index}]",
                "nccl_straggler reads advanced NCCL tracing only (allowed: set "
                "capture.nccl_trace, e.g. [default], with nsight=2026.4.1 or later)",
            )
        elif recipe in _RECIPES_NEEDING_ARGUMENTS:
            yield Issue(
                f"capture.recipes[{index}]",
                f"{recipe!r} needs arguments that nsysgen does not pass yet "
                f"(allowed: recipes without required arguments)",
            )


def _extra_args_not_owned(config: Config) -> Iterator[Issue]:
    for index, arg in enumerate(config.capture.extra_args):
        switch = arg.split("=", 1)[0]
        if switch in _OWNED_SWITCHES:
            yield Issue(
                f"capture.extra_args[{index}]",
                f"{switch} is set by nsysgen from capture.* (mode, delay, trace, report_dir, "
                "...) and would contradict it (allowed: other nsys profile switches)",
            )


def _workload_own(config: Config) -> Iterator[Issue]:
    """The workload's own rules (its plug-in's checks)."""
    yield from workload_kind(config).checks(config)


def _timeout_readable(config: Config) -> Iterator[Issue]:
    argument = timeout_argument(config)
    if config.workload.collective_timeout_s is None and argument and minutes(argument[1]) is None:
        path, value = argument
        yield Issue(
            path,
            f"--distributed-timeout-minutes {value!r} is not a whole number of minutes (at "
            "least 1), which nsysgen reads to weigh the pause at the window's close against "
            "the collective timeout (allowed: e.g. --distributed-timeout-minutes=30; if the "
            "program reads it otherwise, state the timeout in workload.collective_timeout_s)",
        )


@cache
def _bundled(name: str) -> dict[str, Any]:
    """The bundled workload group file `name` as written (interpolations unresolved); {} where
    nsysgen bundles none of that name (a group file of the user's own)."""
    path = CONF_DIR / "workload" / f"{name}.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _as_compiled(value: Any, config: Config) -> str:
    return str(value).replace("${cluster.shared_fs}", config.cluster.shared_fs)


def _declared_program(config: Config) -> Iterator[Issue]:
    """The program that runs is the one declared: a script of one's own never gets the bundled
    example's arguments (they belong to the example's script), and the bundled placeholder
    command is never compiled."""
    workload = config.workload
    block = _bundled(workload.name).get(workload.kind)
    if not isinstance(block, dict):
        return
    settings = workload.settings
    if isinstance(settings, ScriptSettings):
        example = tuple(_as_compiled(a, config) for a in block.get("args") or ())
        script = _as_compiled(block.get("script", ""), config)
        mine = PurePosixPath(settings.script).name != PurePosixPath(script).name
        if example and settings.args == example and mine:
            key = f"workload.{workload.kind}"
            yield Issue(
                f"{key}.args",
                f"the bundled example's {len(example)} arguments ({example[0]} ...) are for "
                f"{script}, not for {key}.script={settings.script}: set {key}.args to your "
                f'script\'s (\'{key}.args=["--lr=1e-4", "--max_steps=500"]\'), or {key}.args=[] '
                "for none",
            )
    if isinstance(settings, CommandSettings):
        placeholder = tuple(_as_compiled(a, config) for a in block.get("argv") or ())
        if placeholder and settings.argv == placeholder:
            yield Issue(
                "workload.command.argv",
                f"{' '.join(placeholder)} is the bundled placeholder, not a program of yours: "
                "set workload.command.argv to your program and its arguments "
                "('workload.command.argv=[torchrun, \"--nproc-per-node=8\", /fsx/train.py]')",
            )


CHECKS: tuple[Check, ...] = (
    _declared_program,
    _ranks_in_world,
    _collectors_supported,
    _step_window,
    _launch_supported,
    _settings_of_other_modes,
    _nvtx_traced,
    _known_to_version,
    _recipes_runnable,
    _extra_args_not_owned,
    _workload_own,
    _switch_values_known,
    _timeout_readable,
)


def semantic_issues(config: Config) -> list[Issue]:
    """Every cross-field problem of a schema-valid config."""
    return sorted({issue for check in CHECKS for issue in check(config)})
