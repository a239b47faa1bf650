"""Profiling lints: stable IDs, a one-line fix each, a configurable severity.

They run on every compile (errors stop it with exit 2, warnings print) and `nsysgen plan` lists
them. Each looks at the config and at the plan: what every task will really run and write.
`CORE_LINTS` hold for every target; a target adds its own (`Target.lints`), which the pipeline
passes in: `enabled()` says which run for a config, `run_lints()` runs them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nsysgen.model import Config, Severity
from nsysgen.profile import teardown
from nsysgen.profile.lints import tasks, window
from nsysgen.profile.plan_types import Finding as Finding
from nsysgen.profile.plan_types import Lint as Lint
from nsysgen.profile.plan_types import ProfilePlan

CORE_LINTS: tuple[Lint, ...] = (
    Lint(
        "NSG001",
        "EFA / GPU metrics collectors on more than one rank of a node",
        "leave EFA/GPU metrics to capture.efa_metrics/gpu_metrics (one rank per node)",
        "error",
        tasks.collectors_per_node,
    ),
    Lint(
        "NSG002",
        "report names that collide",
        "put %q{SLURM_PROCID} and %q{SLURMD_NODENAME} in capture.report_name, or set it to null",
        "error",
        tasks.colliding_names,
    ),
    Lint(
        "NSG003",
        "a window that ends after the job's time limit",
        "shorten capture.delay/duration or raise job.time_limit_min",
        "error",
        window.window_past_limit,
    ),
    Lint(
        "NSG004",
        "`--duration` without `--kill none` (ends the training)",
        "drop --duration from capture.extra_args; capture.duration adds --kill=none",
        "error",
        tasks.duration_kills,
    ),
    Lint(
        "NSG005",
        "a capture-range end that shuts the job down",
        "use --capture-range-end=stop (nsysgen's default) or add --kill=none",
        "error",
        tasks.range_end_shuts_down,
    ),
    Lint(
        "NSG006",
        "more recording ranks than `lints.max_profiled_ranks` (64)",
        "record fewer ranks (capture.ranks=[0] or one_per_node) or raise lints.max_profiled_ranks",
        "warning",
        tasks.too_many_ranks,
    ),
    Lint(
        "NSG007",
        "reports outside the shared filesystem",
        "put capture.report_dir under cluster.shared_fs",
        "error",
        tasks.outside_shared_fs,
    ),
    Lint(
        "NSG008",
        "a TMPDIR under /tmp or /dev/shm in containers (nsys needs an exec-able one)",
        "leave cluster.env.TMPDIR unset (nsysgen gives nsys one) or point it at an exec-able dir",
        "warning",
        tasks.tmpdir_in_containers,
    ),
    Lint(
        "NSG009",
        "`%q{VAR}` of a variable the target does not set (or `%q{HOSTNAME}` on Slurm)",
        "use variables the target sets: %q{SLURM_PROCID}, %q{SLURMD_NODENAME}, ...",
        "error",
        tasks.unset_variables,
    ),
    Lint(
        "NSG010",
        "secrets in configs (by name and by shape, every block)",
        "pass secrets at run time, or from a Kubernetes Secret (target.secret_env)",
        "error",
        tasks.secrets,
    ),
    Lint(
        "NSG012",
        "recording is expected to slow a multi-rank job by more than 2 % outside the window",
        "record fewer ranks, start the window early and end the job after it, or capture the "
        "step in a CUDA graph",
        "warning",
        tasks.slows_the_job,
    ),
    Lint(
        "NSG013",
        "no room to write the report before the time limit",
        "end the capture earlier or raise job.time_limit_min (see README, Teardown)",
        "warning",
        teardown.no_room_to_write,
    ),
    Lint(
        "NSG015",
        "`source` is not the file the job runs",
        "set workload.<kind>.script to where the source lives on the cluster, e.g. "
        "${cluster.shared_fs}/<repo>/<source>",
        "error",
        window.source_not_run,
    ),
    Lint(
        "NSG016",
        "a step window that cannot end before the job's time limit",
        "record earlier steps (capture.first_step/last_step) or raise job.time_limit_min; "
        "workload.estimate.step_seconds sets the pace",
        "error",
        window.step_window_past_limit,
    ),
    Lint(
        "NSG017",
        "the script's own arguments rule out the window (its step limit ends the run first)",
        "keep capture.last_step within the steps the script runs (its --max_steps, "
        "--train-iters, trainer.max_steps, ...) or raise that limit",
        "error",
        window.steps_past_the_run,
    ),
    Lint(
        "NSG021",
        "the CUDA hardware trace on Blackwell in a capture that starts or stops while the program "
        "runs (reports seen with no kernels)",
        "set capture.cuda_trace=auto or software (nsysgen then traces cuda-sw)",
        "error",
        window.hardware_trace_time_boxed,
    ),
    Lint(
        "NSG022",
        "advanced NCCL tracing needs NCCL >= 2.28 in the job, which nsysgen cannot see",
        "check the job's NCCL (python -c 'import torch; print(torch.cuda.nccl.version())'); with "
        "an older NCCL set capture.nccl_trace=[] (NCCL's NVTX ranges are traced instead)",
        "warning",
        window.nccl_trace_needs_new_nccl,
    ),
    Lint(
        "NSG023",
        "the pause at the window's close comes near the job's collective timeout",
        "shorten the window (capture.duration, or fewer steps), record fewer ranks "
        "(capture.ranks), trace less (capture.trace, capture.sample), or raise the timeout "
        "(--distributed-timeout-minutes; a timeout set in code, init_process_group(timeout=...), "
        "goes in workload.collective_timeout_s)",
        "warning",
        window.close_pause_near_timeout,
    ),
    Lint(
        "NSG018",
        "a window that opens after nccl-tests have ended (by nsysgen's run-length estimate)",
        "set capture.delay=auto (2 s) or below the run length `nsysgen plan` shows, or run "
        "more iterations (workload.nccl.iterations)",
        "error",
        window.window_after_nccl_tests,
    ),
    Lint(
        "NSG024",
        "a per-node session records more ranks than `capture.ranks` names",
        "list every rank of the recorded nodes in capture.ranks to accept the data, or record "
        "with one task per GPU (workload.launch=per_gpu) where the workload has it",
        "warning",
        tasks.more_ranks_than_named,
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
