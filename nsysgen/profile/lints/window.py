"""Lints of when the capture runs: a window or step window past the job's time limit or past
the run, the pause at its close, the CUDA and NCCL trace it records."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator

from nsysgen.model import Config, ScriptSettings
from nsysgen.patching.step_args import step_limit
from nsysgen.profile import cuda_trace, nccl_run, pause
from nsysgen.profile.pause import NEAR_FRACTION
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.profile.workloads.registry import workload_kind
from nsysgen.units import human_bytes, human_seconds


def window_past_limit(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    capture, limit = config.capture, plan.time_limit_s
    if capture.mode != "window":
        return
    delay, duration, end = capture.delay_s, capture.duration or 0, plan.window_end_s
    if end is not None and end > limit:
        yield (
            "capture.duration",
            f"the window ends {end:.0f} s after launch (delay "
            f"{delay} + duration {duration}), after the job's time limit of {limit} s "
            f"(job.time_limit_min={config.job.time_limit_min}) (allowed: delay + duration <= "
            f"{limit})",
        )
    elif not duration and delay >= limit:
        yield (
            "capture.delay",
            f"the window opens {delay} s after launch, at or after the job's "
            f"time limit of {limit} s (allowed: delay < {limit})",
        )


def step_window_past_limit(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # The end the plan computes (plan.window_end_s), the one `nsysgen plan` shows.
    end, limit = plan.window_end_s, plan.time_limit_s
    if config.capture.mode != "steps" or end is None or end <= limit:
        return
    yield (
        "capture.last_step",
        f"the step window ends about {end:.0f} s after the training loop starts, after the "
        f"job's time limit of {limit} s (job.time_limit_min={config.job.time_limit_min}) even "
        f"before the job's startup is counted: {plan.window}; the job is stopped before it "
        f"records step {config.capture.last_step} (allowed: a window that ends by {limit} s)",
    )


def source_not_run(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # workload.<kind>.source is the script nsysgen reads (and patches) here; the job runs
    # workload.<kind>.script on the cluster. Seen: source set, script left at the packaged
    # sample, and the job ran the sample without the step window.
    settings = config.workload.settings
    if config.capture.mode != "steps" or not isinstance(settings, ScriptSettings):
        return
    if not settings.source:
        return
    # The schemas keep both free of `..`: source is relative (to the repository root), script
    # absolute, so the script must be the source's path under some folder of the cluster.
    source = posixpath.normpath(settings.source)
    script = posixpath.normpath(settings.script)
    if script == source or script.endswith("/" + source):
        return
    block = f"workload.{config.workload.kind}"
    yield (
        f"{block}.script",
        f"{block}.source={settings.source} is the script nsysgen reads for the step window, but "
        f"the job runs {block}.script={settings.script}, another file: the window would not be "
        f"in the program that runs (allowed: a {block}.script that ends with /{source})",
    )


def script_arguments(config: Config) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The argument lists nsysgen passes to the workload's program as written in its block:
    every `args` (argparse flags) or `overrides` (Hydra) field of the workload's settings."""
    settings = config.workload.settings
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if item.name in ("args", "overrides") and isinstance(value, tuple):
            words = tuple(word for word in value if isinstance(word, str))
            if len(words) == len(value):
                yield f"workload.{config.workload.kind}.{item.name}", words


def steps_past_the_run(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    capture = config.capture
    if capture.mode != "steps":
        return
    first, last = config.setup.first_step, config.setup.last_step
    # Steps are numbered from 0 (capture.*_step), or as a framework with its own window
    # numbers them (Megatron logs iterations from 1).
    native, source = workload_kind(config).native, config.training_patch
    if native is not None:
        start, numbered = (
            native.first,
            f"{config.workload.kind} numbers its steps from {native.first}",
        )
    elif source is not None and source.library_first is not None:
        # A library's loop: the helper reads the library's own counter (its logs' numbers).
        start = source.library_first
        numbered = f"the {source.library} numbers its steps from {start}, as the helper reads it"
    elif source is not None and (source.at_step or "").endswith("+ 1"):
        # The script logs its counter after the increment: its first step is 1.
        start, numbered = 1, f"the script numbers its steps from 1 ({source.at_step})"
    else:
        start, numbered = 0, "steps are numbered from 0"
    for path, args in script_arguments(config):
        limit = step_limit(args)
        if limit is None:
            continue
        end = start + limit.steps  # the first step the run does not reach
        if last < end:
            continue
        lost = f"step {last} never runs" if last == end else f"steps {end}..{last} never run"
        what = "the window never opens" if first >= end else f"the window is cut short: {lost}"
        yield (
            f"{path}[{limit.index}]",
            f"{limit.text} ends the run after {limit.steps} steps, but the window records steps "
            f"{first}..{last} (capture.first_step..last_step): {what} (assumed: {numbered}, as "
            f"capture.*_step count them, so a run of {limit.steps} steps runs steps "
            f"{start}..{end - 1} and ends before step {end}) (allowed: capture.last_step <= "
            f"{end - 1}, or a step limit of at least {last - start + 1})",
        )


def window_after_nccl_tests(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    run = nccl_run.estimate(config)
    if config.capture.mode != "window" or run is None:
        return
    if config.capture.delay_s >= run.slow_seconds:
        yield (
            "capture.delay",
            f"the window opens {config.capture.delay_s} s after launch, but nccl-tests are "
            f"estimated to end by {run.slow_seconds:.0f} s (run {run.text()}): the report "
            "would hold none of the test (allowed: capture.delay below "
            f"{run.slow_seconds:.0f}, or auto)",
        )


def hardware_trace_time_boxed(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    boxed = plan.time_boxed
    if boxed and cuda_trace.blackwell(config) and cuda_trace.records_hardware(config, boxed):
        yield (
            "capture.cuda_trace",
            f"nsys {config.nsight.version} on {config.cluster.gpu_model} records the CUDA "
            f"hardware trace (--trace={','.join(cuda_trace.trace_values(config, boxed))}), and a "
            "capture "
            f"that starts or stops while the program runs ({config.capture.mode}) has come back "
            "with no kernels from it ('incomplete CUPTI events dropped'); cuda-sw kept them",
        )


def close_pause_near_timeout(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    expected = pause.estimate(config, plan.size.bytes_per_report, plan.target_window)
    timeout = expected.timeout_s
    if (
        expected.close_s is not None
        and timeout is not None
        and expected.close_s > (NEAR_FRACTION * timeout)
    ):
        yield (
            "capture",
            "the window's close is expected to hold each recorded rank "
            f"~{human_seconds(expected.close_s)}{pause.with_options(expected.close_options)} "
            f"(~{human_bytes(plan.size.bytes_per_report)} per report; {pause.BASIS}), more than "
            f"half the collective timeout, {expected.timeout_s} s ({expected.timeout_source}): "
            "the other ranks wait that long at their next collective, and past the timeout "
            "the job is aborted",
        )


def nccl_trace_needs_new_nccl(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if config.capture.nccl_trace:
        yield (
            "capture.nccl_trace",
            "nsys's advanced NCCL tracing is an NCCL profiler plugin: with NCCL older than 2.28 "
            "the report holds no NCCL data at all (and NCCL's NVTX ranges are off while it is on)",
        )
