"""`nsysgen plan`: the profile plan and its lints as a table, or as JSON. Writes nothing."""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass
from typing import Any

from nsysgen.model import Config
from nsysgen.profile import nccl_run, pause
from nsysgen.profile.analysis_job import analysis_job
from nsysgen.profile.estimate import human_bytes
from nsysgen.profile.lints import Finding, enabled
from nsysgen.profile.plan import ProfilePlan, RecordedTask
from nsysgen.profile.plan_types import RecordedRanks
from nsysgen.targets import TARGETS
from nsysgen.textwidth import PIPE_WIDTH, shell_lines, wrap
from nsysgen.units import rounded_seconds

_SAMPLE = 8  # report names shown (table and JSON) unless --expand asks for more


@dataclass(frozen=True)
class Expand:
    """Which report names to spell out: the first `limit`, or those of tasks first..last."""

    limit: int = _SAMPLE
    first: int | None = None
    last: int | None = None

    def tasks(self, plan: ProfilePlan) -> list[RecordedTask]:
        if self.first is not None and self.last is not None:
            chosen = plan.recorded.between(self.first, self.last)
        else:
            chosen = iter(plan.recorded)
        return [task for _, task in zip(range(self.limit), chosen, strict=False)]


def as_dict(
    config: Config, plan: ProfilePlan, findings: list[Finding], expand: Expand | None = None
) -> dict[str, Any]:
    reports, total = plan.reports, plan.total_bytes
    shown = (expand or Expand()).tasks(plan)
    job = analysis_job(config, reports, total / reports if reports else 0)
    return {
        "job": config.job.name,
        "target": config.target.name,
        # False: the nsys version was built from NVIDIA's documentation, never run by the tests.
        "nsys_version_tested": config.nsight.tested,
        "world_size": plan.world_size,
        "nodes": plan.nodes,
        "tasks_per_node": plan.tasks_per_node,
        "launch": plan.launch,
        "recorded_tasks": plan.recorded.describe(),
        "recorded_count": reports,
        "recorded_nodes": plan.recorded.nodes,
        "reports_per": plan.recorded.reports_per(),
        "recorded_ranks": _ranks_dict(plan.recorded_ranks),
        "report_pattern": _switch_value(plan.profile_args, "--output") + ".nsys-rep",
        # Names spelled out: the first few, or those asked for (--expand N, --ranks A-B).
        "recording": [
            {
                "task": r.task,
                "node": r.node,
                "local": r.local,
                "report": r.report,
                "collectors": r.collectors,
            }
            for r in shown
        ],
        "report_names_unique": plan.recorded.collisions()[0] == 0,
        "collector_count": plan.recorded.collector_count,
        "collector_tasks": plan.recorded.collector_tasks(_SAMPLE),
        "analysis": {
            "nodes": job.nodes,
            "workers_per_node": job.workers_per_node,
            "worker_memory_gb": job.worker_memory_gb,
            "time_limit_min": job.time_limit_min,
            "estimate_s": round(job.estimate_s, 1),
        },
        "window": plan.window,
        "steps": dict(plan.steps),
        "window_end_s": plan.window_end_s,
        "nccl_tests_run_s": _run_seconds(config),
        "time_limit_s": plan.time_limit_s,
        "reports": reports,
        "bytes_per_report": plan.size.bytes_per_report,
        "total_bytes": total,
        "estimate_basis": plan.size.basis,
        "slowdown_outside_window": asdict(plan.slowdown),
        "pause_at_window_edges": {
            **asdict(_pause(config, plan)),
            "basis": pause.BASIS,
        },
        "nsys_command": list(plan.nsys_command),
        "unconfirmed": [
            {"what": what, "check": check}
            for what, check in TARGETS[config.target.name].unconfirmed(config, plan)
        ],
        "cuda_graph_trace": _graph_trace(plan)[0],
        "lints": [
            {
                "id": f.lint,
                "severity": f.severity,
                "path": f.path,
                "message": f.message,
                "fix": f.fix,
            }
            for f in findings
        ],
    }


def _ranks_dict(ranks: RecordedRanks) -> dict[str, Any]:
    return {
        "reports": ranks.reports,
        "ranks_per_report": ranks.ranks_per_report,
        "per_node": list(ranks.per_node),
        "total": ranks.total,
        "named": ranks.named,
    }


def _switch_value(args: tuple[str, ...], name: str) -> str:
    return next((a.split("=", 1)[1] for a in reversed(args) if a.startswith(f"{name}=")), "")


def as_json(
    config: Config, plan: ProfilePlan, findings: list[Finding], expand: Expand | None = None
) -> str:
    return json.dumps(as_dict(config, plan, findings, expand), indent=2, sort_keys=True)


def as_table(
    config: Config,
    plan: ProfilePlan,
    findings: list[Finding],
    expand: Expand | None = None,
    width: int = PIPE_WIDTH,
) -> str:
    """The plan as text in lines of at most `width` characters."""
    expand = expand or Expand()
    data = as_dict(config, plan, findings, expand)
    recorded = plan.recorded
    collectors = data["collector_count"]
    job = data["analysis"]
    end = _window_end(config, plan)
    rows = [
        (
            "job",
            f"{config.job.name} ({config.target.name}, {config.cluster.nodes} x "
            f"{config.cluster.instance_type}, nsys {config.nsight.version})",
        ),
        (
            "world size",
            f"{plan.world_size} GPUs = {plan.nodes} nodes x {config.cluster.gpus_per_node}",
        ),
        *([("nsys", _untested(config))] if not config.nsight.tested else []),
        ("launch", plan.launch),
        (
            "recording",
            f"{len(recorded)} task(s) on {recorded.nodes} node(s): {recorded.describe()}, "
            f"{recorded.reports_per()}",
        ),
        ("ranks recorded", plan.recorded_ranks.text()),
        (
            "collectors",
            (
                f"EFA/GPU metrics on {collectors} task(s), "
                + (
                    "at most one per node"
                    if not recorded.crowded_nodes()[0]
                    else "several on a node (see NSG001)"
                )
                if collectors
                else "none"
            ),
        ),
        ("window", f"{plan.window}; ends at {end}; job time limit {plan.time_limit_s} s"),
        *([("nccl-tests run", run.text())] if (run := nccl_run.estimate(config)) else []),
        *plan.steps,
        ("reports", f"{_reports(plan)} in {_folder(plan)}"),
        ("estimate basis", plan.size.basis),
        ("pause", pause.text(_pause(config, plan))),
        (
            "slowdown",
            f"~{plan.slowdown.job_percent:g} % outside the window, paid by "
            f"{plan.slowdown.paid_by}; {plan.slowdown.basis}",
        ),
        ("cuda graphs", _graph_trace(plan)[1]),
        ("names unique", "yes" if data["report_names_unique"] else "NO (see NSG002)"),
        (
            "analysis",
            f"~{rounded_seconds(job['estimate_s'])} with {job['nodes'] * job['workers_per_node']} "
            f"Dask worker(s) ({job['nodes']} node(s) x {job['workers_per_node']}, "
            f"{job['worker_memory_gb']} GB each; analysis.*)",
        ),
    ]
    label = max(len(name) for name, _ in rows)
    lines = []
    for name, value in rows:
        lines += wrap(value, width, f"{name:<{label}}  ", " " * (label + 2))
    lines.append("")
    shown = expand.tasks(plan)
    lines += wrap(f"report names ({data['report_pattern']}):", width, "", "    ")
    for r in shown:
        lines += wrap(f"{r.report}.nsys-rep", width, "  ", "    ")
    if expand.first is None and len(recorded) > len(shown):
        more = len(recorded) - len(shown)
        lines += wrap(
            f"... {more} more (--expand N for more, --ranks A-B for a range)", width, "  ", "    "
        )
    lines.append("")
    needed = TARGETS[config.target.name].prerequisites(config)
    if needed:
        lines.append("before the job starts (each line: what, how to check, where from):")
        for what, command, source in needed:
            lines += wrap(what, width, "  ", "    ")
            lines += wrap(f"check: {command}", width, "    ", "      ")
            lines += wrap(f"from: {source}", width, "    ", "      ")
        lines.append("")
    doubts = TARGETS[config.target.name].unconfirmed(config, plan)
    if doubts:
        lines.append("not confirmed for this injector (each line: what, how to check):")
        for what, command in doubts:
            lines += wrap(what, width, "  ", "    ")
            lines += wrap(f"check: {command}", width, "    ", "      ")
        lines.append("")
    first = str(recorded[0].task) if len(recorded) else "-"
    lines.append("nsys command of task " + first + ":")
    lines += shell_lines(plan.nsys_command, width)
    lines.append("")
    fired = {f.lint for f in findings}
    lines.append(f"lints ({len(findings)} finding(s)):")
    for finding in findings:
        head = f"{finding.severity:<7} {finding.lint} {finding.path}: {finding.message}"
        lines += wrap(head, width, "  ", " " * 10)
        lines += wrap(f"fix: {finding.fix}", width, " " * 10, " " * 15)
    # Exactly the lints that ran for this config (its target's, not those switched off).
    ran = enabled(config, TARGETS[config.target.name].lints)
    passed = [lint.id for lint, _ in ran if lint.id not in fired]
    lines += wrap(f"passed: {', '.join(passed)}", width, "  ", " " * 10)
    return "\n".join(lines)


def sweep_table(
    rows: list[tuple[str, Config, ProfilePlan, list[Finding]]], width: int = PIPE_WIDTH
) -> str:
    """One line per sweep point: what it records, its window, its reports, its lints; the
    window's text is cut to fit `width` (`nsysgen plan` of one point says it whole)."""
    header: tuple[str, ...] = ("point", "job", "recording", "window", "reports", "lints")
    lines = [header]
    for name, config, plan, findings in rows:
        lints = sorted({f"{f.lint}:{f.severity}" for f in findings}) or ["ok"]
        lines.append(
            (
                name,
                config.job.name,
                _recording(plan),
                plan.window,
                _reports(plan),
                " ".join(lints),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    # Cut the window's text, then the job's name (the point's name says most of it), to fit.
    for column in (header.index("window"), header.index("job")):
        others = sum(widths) - widths[column] + 2 * (len(header) - 1)
        if others + widths[column] > width:
            fit = max(len(header[column]), width - others)
            lines = [_cut(line, column, fit) for line in lines]
            widths[column] = fit
    return "\n".join(
        "  ".join(cell.ljust(size) for cell, size in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _graph_trace(plan: ProfilePlan) -> tuple[str, str]:
    """How nsys records CUDA graphs in this run, and what `nsysgen analyze` then sees."""
    value = "graph"  # nsys's default
    for arg in plan.nsys_command:
        if arg.startswith("--cuda-graph-trace="):
            value = arg.split("=", 1)[1]
    if value.endswith("host-only"):
        return value, (
            f"--cuda-graph-trace={value} records graph launches on the CPU only: analyze sees "
            "no GPU work of a graph (its time counts as idle); leave the default or use node"
        )
    if value.split(":")[0] == "node":
        return value, (
            "traced inside (--cuda-graph-trace=node): analyze reads the kernels of each graph; "
            "each graph launch costs more while recording"
        )
    return value, (
        "each graph launch is one piece of GPU work (--cuda-graph-trace=graph, nsys's "
        "default): analyze counts it as compute but cannot see the kernels inside; to see "
        "them (torch.compile mode='reduce-overhead', CUDA graph capture) add "
        "capture.extra_args=['--cuda-graph-trace=node'] (measured: window +39 %, report 13x "
        "larger; bench/gpu/RESULTS.md)"
    )


def _reports(plan: ProfilePlan) -> str:
    """'2 x ~18 MB = ~36 MB', with the GPU metrics' share where collectors add it."""
    each = plan.size.bytes_per_report
    metrics = plan.total_bytes - each * plan.reports
    extra = f" + ~{human_bytes(metrics)} of GPU metrics" if metrics > 0 else ""
    return f"{plan.reports} x ~{human_bytes(each)}{extra} = ~{human_bytes(plan.total_bytes)}"


def _window_end(config: Config, plan: ProfilePlan) -> str:
    if plan.window_end_s is not None:
        return f"{plan.window_end_s:.0f} s"
    if config.capture.mode == "nvtx":  # --capture-range-end=stop: the range's end closes it
        return "the range's end (the program's, if the range never ends)"
    return "program's end"


def _folder(plan: ProfilePlan) -> str:
    """Where the reports land: the folder of nsys's -o (an operator's bucket on EKS)."""
    return posixpath.dirname(_switch_value(plan.profile_args, "--output"))


def _recording(plan: ProfilePlan) -> str:
    """'1 of 16 ranks', or for one task a node that drives several GPUs '1 of 2 nodes (16
    ranks)': its report holds every rank of the node."""
    if plan.tasks_per_node == 1 and plan.world_size > plan.nodes:
        return f"{len(plan.recorded)} of {plan.nodes} nodes ({plan.world_size} ranks)"
    return f"{len(plan.recorded)} of {plan.world_size} ranks"


def _pause(config: Config, plan: ProfilePlan) -> pause.Pause:
    return pause.estimate(config, plan.size.bytes_per_report, plan.target_window)


def _untested(config: Config) -> str:
    return (
        f"{config.nsight.version} was built from NVIDIA's documentation "
        f"({', '.join(config.nsight.sources)}) and not run by nsysgen's tests"
    )


def _cut(line: tuple[str, ...], index: int, fit: int) -> tuple[str, ...]:
    cell = line[index]
    short = cell if len(cell) <= fit else cell[: max(0, fit - 3)] + "..."
    return (*line[:index], short, *line[index + 1 :])


def _run_seconds(config: Config) -> dict[str, float] | None:
    """nccl-tests' estimated run length (nsysgen.profile.nccl_run), for the JSON plan."""
    run = nccl_run.estimate(config)
    if run is None:
        return None
    return {"estimate": round(run.seconds, 1), "at_half_bandwidth": round(run.slow_seconds, 1)}
