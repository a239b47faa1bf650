"""Lints of what every recorded task runs and writes: the nsys command line, the report names,
how many tasks record and what that costs, the variables and secrets of the config."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from nsysgen.model import Config
from nsysgen.profile.overhead import THRESHOLD_PERCENT
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.profile.secrets import find_secrets


def switch(args: tuple[str, ...], name: str) -> str | None:
    """The value of the last `name=value` switch in args, if any."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    return values[-1] if values else None


def collectors_per_node(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # From the selection's shape (RecordedTasks), not by counting every task.
    crowded, first, count = plan.recorded.crowded_nodes()
    if crowded:
        yield (
            "capture.extra_args",
            f"node {first} runs {count} EFA/GPU-metrics "
            f"collectors ({crowded} node(s) affected); they are node-wide, so every "
            "copy samples the same counters",
        )


def colliding_names(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # From the name pattern: which of task, node and local id it holds (RecordedTasks).
    repeated, example, count = plan.recorded.collisions()
    if repeated:
        yield (
            "capture.report_name",
            f"{repeated} report name(s) are shared by several "
            f"tasks, e.g. {example}.nsys-rep ({count} tasks); they overwrite "
            "each other",
        )


def duration_kills(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    duration = switch(plan.profile_args, "--duration")
    if duration not in (None, "0") and switch(plan.profile_args, "--kill") != "none":
        yield (
            "capture.extra_args",
            f"--duration={duration} without --kill=none: nsys ends the "
            "program when the window closes (and a restart policy profiles it again)",
        )


def range_end_shuts_down(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if switch(plan.profile_args, "--capture-range") in (None, "none"):
        return
    end = switch(plan.profile_args, "--capture-range-end") or "stop-shutdown"
    if "shutdown" in end and switch(plan.profile_args, "--kill") != "none":
        yield (
            "capture.extra_args",
            f"--capture-range-end={end} shuts the session down and "
            "kills the program when the range ends",
        )


def too_many_ranks(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    limit = config.lints.max_profiled_ranks
    # Ranks, not reports: a report of a node's launcher holds every rank of the node.
    ranks = plan.recorded_ranks
    if ranks.total > limit:
        yield (
            "capture.ranks",
            f"{ranks.total:,} ranks record (in {ranks.reports:,} reports), more than "
            f"lints.max_profiled_ranks={limit}: big reports, slow post-processing",
        )


# The packaged capture groups' ranks: left as it is, it names no rank the user chose, and a
# warning from the defaults teaches people to ignore warnings (`plan` and the compile still say
# how many ranks a run records).
DEFAULT_RANKS = (0,)


def more_ranks_than_named(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    ranks = plan.recorded_ranks
    if config.capture.ranks == DEFAULT_RANKS:
        return
    if ranks.ranks_per_report > 1 and ranks.extra:
        yield (
            "capture.ranks",
            f"each report holds every rank of its node: nsys wraps the node's launcher "
            f"(workload.launch={config.workload.launch}), so the run records {ranks.total} "
            f"ranks in {ranks.reports} report(s), {ranks.extra} more than the {ranks.named} "
            f"that capture.ranks={ranks.named_text} names "
            f"({ranks.total / ranks.named:.1f}x the data)",
        )


def outside_shared_fs(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    shared = posixpath.normpath(config.cluster.shared_fs)
    report_dir = posixpath.normpath(config.capture.report_dir)
    if report_dir != shared and not report_dir.startswith(shared.rstrip("/") + "/"):
        yield (
            "capture.report_dir",
            f"{config.capture.report_dir} is outside the shared "
            f"filesystem {shared} of cluster {config.cluster.name}, so reports of other nodes "
            f"would be lost (allowed: a path under {shared})",
        )


def tmpdir_in_containers(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    # The generated files give nsys an exec-able TMPDIR in containers; a TMPDIR the config sets
    # under /tmp or /dev/shm takes that back where those are mounted noexec.
    found = plan.facts.job_env.get("TMPDIR")
    tmpdir = found.value.rstrip("/") if found else ""
    noexec = any(tmpdir == d or tmpdir.startswith(d + "/") for d in ("/tmp", "/dev/shm"))
    if plan.in_container and noexec and found:
        yield (
            found.key,
            f"nsys stages its injection libraries in TMPDIR ({tmpdir}); a container's /tmp and "
            "/dev/shm may be mounted noexec, which breaks injection",
        )


def unset_variables(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    output = switch(plan.profile_args, "--output") or ""
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


def secrets(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    for path, message in find_secrets(config.values):
        yield (
            path,
            f"{message}, and generated files are committed (allowed: no secrets in configs; "
            "pass them at run time, e.g. exported before sbatch, or from a Kubernetes Secret "
            "through target.secret_env)",
        )


def slows_the_job(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    slowdown = plan.slowdown
    if plan.world_size > 1 and slowdown.job_percent > THRESHOLD_PERCENT:
        # Ranks, not reports: a report of a node's launcher records every rank of the node.
        recorded = plan.recorded_ranks.total
        yield (
            "capture.ranks",
            f"recording {recorded} of {plan.world_size} ranks is expected to slow the "
            f"whole job by ~{slowdown.job_percent:g} % outside the window (more than "
            f"{THRESHOLD_PERCENT:g} %): {slowdown.basis}; what the measurements support: "
            + "; ".join(slowdown.remedies),
        )
