"""Profiling lints: stable IDs, a one-line fix each, a configurable severity.

They run on every compile (errors stop it with exit 2, warnings print) and `nsysgen plan` lists
them. Each looks at the config and at the plan: what every task will really run and write.
`CORE_LINTS` hold for every target; a target adds its own (`Target.lints`), which the pipeline
passes in: `enabled()` says which run for a config, `run_lints()` runs them.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from nsysgen.model import Config, Severity
from nsysgen.patching.step_args import step_limit
from nsysgen.profile import cuda_trace, nccl_run, pause
from nsysgen.profile.environment import job_env
from nsysgen.profile.estimate import human_bytes, human_seconds
from nsysgen.profile.overhead import THRESHOLD_PERCENT
from nsysgen.profile.pause import NEAR_FRACTION
from nsysgen.profile.plan import ProfilePlan
from nsysgen.profile.recorded import recorded_ranks
from nsysgen.profile.secrets import find_secrets
from nsysgen.profile.teardown import no_room_to_write
from nsysgen.profile.workloads import ScriptSettings, workload_kind


@dataclass(frozen=True)
class Finding:
    lint: str
    severity: Severity
    path: str  # config path to change
    message: str
    fix: str


@dataclass(frozen=True)
class Lint:
    id: str
    title: str
    fix: str
    severity: Severity
    check: Callable[[Config, ProfilePlan], Iterator[tuple[str, str]]]  # (path, message)


def _switch(args: tuple[str, ...], name: str) -> str | None:
    """The value of the last `name=value` switch in args, if any."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    return values[-1] if values else None


def _collectors_per_node(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # From the selection's shape (RecordedTasks), not by counting every task.
    crowded, first, count = plan.recorded.crowded_nodes()
    if crowded:
        yield (
            "capture.extra_args",
            f"node {first} runs {count} EFA/GPU-metrics "
            f"collectors ({crowded} node(s) affected); they are node-wide, so every "
            "copy samples the same counters",
        )


def _colliding_names(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # From the name pattern: which of task, node and local id it holds (RecordedTasks).
    repeated, example, count = plan.recorded.collisions()
    if repeated:
        yield (
            "capture.report_name",
            f"{repeated} report name(s) are shared by several "
            f"tasks, e.g. {example}.nsys-rep ({count} tasks); they overwrite "
            "each other",
        )


def _window_past_limit(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
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


def _duration_kills(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    duration = _switch(plan.profile_args, "--duration")
    if duration not in (None, "0") and _switch(plan.profile_args, "--kill") != "none":
        yield (
            "capture.extra_args",
            f"--duration={duration} without --kill=none: nsys ends the "
            "program when the window closes (and a restart policy profiles it again)",
        )


def _range_end_shuts_down(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if _switch(plan.profile_args, "--capture-range") in (None, "none"):
        return
    end = _switch(plan.profile_args, "--capture-range-end") or "stop-shutdown"
    if "shutdown" in end and _switch(plan.profile_args, "--kill") != "none":
        yield (
            "capture.extra_args",
            f"--capture-range-end={end} shuts the session down and "
            "kills the program when the range ends",
        )


def _too_many_ranks(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    limit = config.lints.max_profiled_ranks
    if len(plan.recorded) > limit:
        yield (
            "capture.ranks",
            f"{len(plan.recorded)} tasks record, more than "
            f"lints.max_profiled_ranks={limit}: big reports, slow post-processing",
        )


def _more_ranks_than_named(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    ranks = recorded_ranks(config, plan)
    if ranks.ranks_per_report > 1 and ranks.extra:
        yield (
            "capture.ranks",
            f"each report holds every rank of its node: nsys wraps the node's launcher "
            f"(workload.launch={config.workload.launch}), so the run records {ranks.total} "
            f"ranks in {ranks.reports} report(s), {ranks.extra} more than the {ranks.named} "
            f"that capture.ranks={ranks.named_text} names "
            f"({ranks.total / ranks.named:.1f}x the data)",
        )


def _outside_shared_fs(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    shared = posixpath.normpath(config.cluster.shared_fs)
    report_dir = posixpath.normpath(config.capture.report_dir)
    if report_dir != shared and not report_dir.startswith(shared.rstrip("/") + "/"):
        yield (
            "capture.report_dir",
            f"{config.capture.report_dir} is outside the shared "
            f"filesystem {shared} of cluster {config.cluster.name}, so reports of other nodes "
            f"would be lost (allowed: a path under {shared})",
        )


def _tmpdir_in_containers(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # The generated files give nsys an exec-able TMPDIR in containers; a TMPDIR the config sets
    # under /tmp or /dev/shm takes that back where those are mounted noexec.
    found = job_env(config).get("TMPDIR")
    tmpdir = found.value.rstrip("/") if found else ""
    noexec = any(tmpdir == d or tmpdir.startswith(d + "/") for d in ("/tmp", "/dev/shm"))
    if plan.in_container and noexec and found:
        yield (
            found.key,
            f"nsys stages its injection libraries in TMPDIR ({tmpdir}); a container's /tmp and "
            "/dev/shm may be mounted noexec, which breaks injection",
        )


def _unset_variables(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    output = _switch(plan.profile_args, "--output") or ""
    for name in sorted(set(re.findall(r"%q\{([^}]*)\}", output))):
        # The placeholder may come from the folder (capture.report_dir) or the file name.
        path = (
            "capture.report_dir"
            if f"%q{{{name}}}" in config.capture.report_dir
            else "capture.report_name"
        )
        misleading = dict(plan.misleading_vars)
        if name in misleading:
            yield (path, misleading[name])
        elif name not in plan.env_vars:
            yield (
                path,
                f"%q{{{name}}} is not set by target "
                f"{config.target.name}, so nsys leaves it literally in every report name",
            )


def _secrets(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    for path, message in find_secrets(config.values):
        yield (
            path,
            f"{message}, and generated files are committed (allowed: no secrets in configs; "
            "pass them at run time, e.g. exported before sbatch, or from a Kubernetes Secret "
            "through target.secret_env)",
        )


def _slows_the_job(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    slowdown = plan.slowdown
    if plan.world_size > 1 and slowdown.job_percent > THRESHOLD_PERCENT:
        yield (
            "capture.ranks",
            f"recording {len(plan.recorded)} of {plan.world_size} ranks is expected to slow the "
            f"whole job by ~{slowdown.job_percent:g} % outside the window (more than "
            f"{THRESHOLD_PERCENT:g} %): {slowdown.basis}; what the measurements support: "
            + "; ".join(slowdown.remedies),
        )


def _source_not_run(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
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


def _step_window_past_limit(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
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


def _script_arguments(config: Config) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The argument lists nsysgen passes to the workload's program as written in its block:
    every `args` (argparse flags) or `overrides` (Hydra) field of the workload's settings."""
    settings = config.workload.settings
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if item.name in ("args", "overrides") and isinstance(value, tuple):
            words = tuple(word for word in value if isinstance(word, str))
            if len(words) == len(value):
                yield f"workload.{config.workload.kind}.{item.name}", words


def _steps_past_the_run(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    capture = config.capture
    if capture.mode != "steps":
        return
    first, last = capture.first_step or 0, capture.last_step or 0
    # Steps are numbered from 0 (capture.*_step), or as a framework with its own window
    # numbers them (Megatron logs iterations from 1).
    native, source = workload_kind(config).native, config.training_patch
    if native is not None:
        start, numbered = (
            native.first,
            f"{config.workload.kind} numbers its steps from {native.first}",
        )
    elif source is not None and (source.at_step or "").endswith("+ 1"):
        # The script logs its counter after the increment: its first step is 1.
        start, numbered = 1, f"the script numbers its steps from 1 ({source.at_step})"
    else:
        start, numbered = 0, "steps are numbered from 0"
    for path, args in _script_arguments(config):
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


def _window_after_nccl_tests(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
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


def _hardware_trace_time_boxed(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
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


def _close_pause_near_timeout(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
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


def _nccl_trace_needs_new_nccl(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if config.capture.nccl_trace:
        yield (
            "capture.nccl_trace",
            "nsys's advanced NCCL tracing is an NCCL profiler plugin: with NCCL older than 2.28 "
            "the report holds no NCCL data at all (and NCCL's NVTX ranges are off while it is on)",
        )


CORE_LINTS: tuple[Lint, ...] = (
    Lint(
        "NSG001",
        "EFA / GPU metrics collectors on more than one rank of a node",
        "leave EFA/GPU metrics to capture.efa_metrics/gpu_metrics (one rank per node)",
        "error",
        _collectors_per_node,
    ),
    Lint(
        "NSG002",
        "report names that collide",
        "put %q{SLURM_PROCID} and %q{SLURMD_NODENAME} in capture.report_name, or set it to null",
        "error",
        _colliding_names,
    ),
    Lint(
        "NSG003",
        "a window that ends after the job's time limit",
        "shorten capture.delay/duration or raise job.time_limit_min",
        "error",
        _window_past_limit,
    ),
    Lint(
        "NSG004",
        "`--duration` without `--kill none` (ends the training)",
        "drop --duration from capture.extra_args; capture.duration adds --kill=none",
        "error",
        _duration_kills,
    ),
    Lint(
        "NSG005",
        "a capture-range end that shuts the job down",
        "use --capture-range-end=stop (nsysgen's default) or add --kill=none",
        "error",
        _range_end_shuts_down,
    ),
    Lint(
        "NSG006",
        "more recording ranks than `lints.max_profiled_ranks` (64)",
        "record fewer ranks (capture.ranks=[0] or one_per_node) or raise lints.max_profiled_ranks",
        "warning",
        _too_many_ranks,
    ),
    Lint(
        "NSG007",
        "reports outside the shared filesystem",
        "put capture.report_dir under cluster.shared_fs",
        "error",
        _outside_shared_fs,
    ),
    Lint(
        "NSG008",
        "a TMPDIR under /tmp or /dev/shm in containers (nsys needs an exec-able one)",
        "leave cluster.env.TMPDIR unset (nsysgen gives nsys one) or point it at an exec-able dir",
        "warning",
        _tmpdir_in_containers,
    ),
    Lint(
        "NSG009",
        "`%q{VAR}` of a variable the target does not set (or `%q{HOSTNAME}` on Slurm)",
        "use variables the target sets: %q{SLURM_PROCID}, %q{SLURMD_NODENAME}, ...",
        "error",
        _unset_variables,
    ),
    Lint(
        "NSG010",
        "secrets in configs (by name and by shape, every block)",
        "pass secrets at run time, or from a Kubernetes Secret (target.secret_env)",
        "error",
        _secrets,
    ),
    Lint(
        "NSG012",
        "recording is expected to slow a multi-rank job by more than 2 % outside the window",
        "record fewer ranks, start the window early and end the job after it, or capture the "
        "step in a CUDA graph",
        "warning",
        _slows_the_job,
    ),
    Lint(
        "NSG013",
        "no room to write the report before the time limit",
        "end the capture earlier or raise job.time_limit_min (see README, Teardown)",
        "warning",
        no_room_to_write,
    ),
    Lint(
        "NSG015",
        "`source` is not the file the job runs",
        "set workload.<kind>.script to where the source lives on the cluster, e.g. "
        "${cluster.shared_fs}/<repo>/<source>",
        "error",
        _source_not_run,
    ),
    Lint(
        "NSG016",
        "a step window that cannot end before the job's time limit",
        "record earlier steps (capture.first_step/last_step) or raise job.time_limit_min; "
        "workload.estimate.step_seconds sets the pace",
        "error",
        _step_window_past_limit,
    ),
    Lint(
        "NSG017",
        "the script's own arguments rule out the window (its step limit ends the run first)",
        "keep capture.last_step within the steps the script runs (its --max_steps, "
        "--train-iters, trainer.max_steps, ...) or raise that limit",
        "error",
        _steps_past_the_run,
    ),
    Lint(
        "NSG021",
        "the CUDA hardware trace on Blackwell in a capture that starts or stops while the program "
        "runs (reports seen with no kernels)",
        "set capture.cuda_trace=auto or software (nsysgen then traces cuda-sw)",
        "error",
        _hardware_trace_time_boxed,
    ),
    Lint(
        "NSG022",
        "advanced NCCL tracing needs NCCL >= 2.28 in the job, which nsysgen cannot see",
        "check the job's NCCL (python -c 'import torch; print(torch.cuda.nccl.version())'); with "
        "an older NCCL set capture.nccl_trace=[] (NCCL's NVTX ranges are traced instead)",
        "warning",
        _nccl_trace_needs_new_nccl,
    ),
    Lint(
        "NSG023",
        "the pause at the window's close comes near the job's collective timeout",
        "shorten the window (capture.duration, or fewer steps), record fewer ranks "
        "(capture.ranks), trace less (capture.trace, capture.sample), or raise the timeout "
        "(--distributed-timeout-minutes; a timeout set in code, init_process_group(timeout=...), "
        "goes in workload.collective_timeout_s)",
        "warning",
        _close_pause_near_timeout,
    ),
    Lint(
        "NSG018",
        "a window that opens after nccl-tests have ended (by nsysgen's run-length estimate)",
        "set capture.delay=auto (2 s) or below the run length `nsysgen plan` shows, or run "
        "more iterations (workload.nccl.iterations)",
        "error",
        _window_after_nccl_tests,
    ),
    Lint(
        "NSG024",
        "a per-node session records more ranks than `capture.ranks` names",
        "list every rank of the recorded nodes in capture.ranks to accept the data, or record "
        "with one task per GPU (workload.launch=per_gpu) where the workload has it",
        "warning",
        _more_ranks_than_named,
    ),
)


def all_lints(own: Iterable[Lint]) -> tuple[Lint, ...]:
    """Every lint by ID: the core ones and `own` (every target's, for the README's table)."""
    return tuple(sorted((*CORE_LINTS, *own), key=lambda lint: lint.id))


def enabled(config: Config, own: Sequence[Lint]) -> list[tuple[Lint, Severity]]:
    """The lints that run for `config`, with their severity: the core ones and its target's
    own (`own`), in ID order, without those switched off."""
    chosen = ((lint, config.lints.severity.get(lint.id, lint.severity)) for lint in all_lints(own))
    return [(lint, severity) for lint, severity in chosen if severity != "off"]


def run_lints(config: Config, plan: ProfilePlan, own: Sequence[Lint]) -> list[Finding]:
    """What the lints that run for `config` (see `enabled`) find, in ID order."""
    return [
        Finding(lint.id, severity, path, message, lint.fix)
        for lint, severity in enabled(config, own)
        for path, message in lint.check(config, plan)
    ]


def markdown_table(own: Iterable[Lint]) -> str:
    """The README's lint table: the core lints and `own` (every target's); a test keeps the
    README in step."""
    rows = ["| ID | problem | default |", "|---|---|---|"]
    rows += [f"| {lint.id} | {lint.title} | {lint.severity} |" for lint in all_lints(own)]
    return "\n".join(rows)
