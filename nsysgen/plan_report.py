"""`nsysgen plan`: the profile plan and its lints as a table, or as JSON. Writes nothing."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict
from typing import Any

from nsysgen.lints import Finding, all_lints
from nsysgen.model import Config
from nsysgen.plan import ProfilePlan

_SAMPLE = 8  # report names shown in the table (all of them are in the JSON)


def _human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError


def totals(config: Config, plan: ProfilePlan) -> tuple[int, int]:
    """(reports, bytes): the GPU-metrics data only counts where a collector runs."""
    from nsysgen.estimate import calibration

    extra = calibration()["gpu_metrics_bytes"] if config.capture.gpu_metrics else 0
    total = sum(plan.size.bytes_per_report + (extra if r.collectors else 0) for r in plan.recorded)
    return len(plan.recorded), round(total)


def as_dict(config: Config, plan: ProfilePlan, findings: list[Finding]) -> dict[str, Any]:
    reports, total = totals(config, plan)
    names = [r.report + ".nsys-rep" for r in plan.recorded]
    return {
        "job": config.job.name,
        "target": config.target.name,
        "world_size": plan.world_size,
        "nodes": plan.nodes,
        "tasks_per_node": plan.tasks_per_node,
        "launch": plan.launch,
        "recording": [
            {
                "task": r.task,
                "node": r.node,
                "local": r.local,
                "report": r.report,
                "collectors": r.collectors,
            }
            for r in plan.recorded
        ],
        "report_names_unique": len(set(names)) == len(names),
        "collector_tasks": [r.task for r in plan.recorded if r.collectors],
        "window": plan.window,
        "window_end_s": plan.window_end_s,
        "time_limit_s": plan.time_limit_s,
        "reports": reports,
        "bytes_per_report": plan.size.bytes_per_report,
        "total_bytes": total,
        "estimate_basis": plan.size.basis,
        "slowdown_outside_window": asdict(plan.slowdown),
        "nsys_command": list(plan.nsys_command),
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


def as_json(config: Config, plan: ProfilePlan, findings: list[Finding]) -> str:
    return json.dumps(as_dict(config, plan, findings), indent=2, sort_keys=True)


def as_table(config: Config, plan: ProfilePlan, findings: list[Finding]) -> str:
    data = as_dict(config, plan, findings)
    recorded = plan.recorded
    tasks = [r.task for r in recorded]
    nodes = sorted({r.node for r in recorded})
    shown = ", ".join(map(str, tasks[:16])) + (", ..." if len(tasks) > 16 else "")
    collectors = data["collector_tasks"]
    end = f"{plan.window_end_s:.0f} s" if plan.window_end_s is not None else "program's end"
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
        ("launch", plan.launch),
        ("recording", f"{len(recorded)} task(s) on {len(nodes)} node(s): {shown}"),
        (
            "collectors",
            (
                f"EFA/GPU metrics on {len(collectors)} task(s), at most one per node"
                if collectors
                else "none"
            ),
        ),
        ("window", f"{plan.window}; ends at {end}; job time limit {plan.time_limit_s} s"),
        (
            "reports",
            f"{data['reports']} x ~{_human(plan.size.bytes_per_report)} = "
            f"~{_human(data['total_bytes'])} in {config.capture.report_dir}",
        ),
        ("estimate basis", plan.size.basis),
        (
            "slowdown",
            f"~{plan.slowdown.job_percent:g} % outside the window, paid by "
            f"{plan.slowdown.paid_by}; {plan.slowdown.basis}",
        ),
        ("names unique", "yes" if data["report_names_unique"] else "NO (see NSG002)"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines.append("")
    lines.append("report names:")
    lines += [f"  {r.report}.nsys-rep" for r in recorded[:_SAMPLE]]
    if len(recorded) > _SAMPLE:
        lines.append(f"  ... {len(recorded) - _SAMPLE} more (all in --json)")
    lines.append("")
    lines.append("nsys command of task " + (str(tasks[0]) if tasks else "-") + ":")
    lines.append("  " + shlex.join(plan.nsys_command))
    lines.append("")
    fired = {f.lint for f in findings}
    lines.append(f"lints ({len(findings)} finding(s)):")
    for finding in findings:
        lines.append(f"  {finding.severity:<7} {finding.lint} {finding.path}: {finding.message}")
        lines.append(f"          fix: {finding.fix}")
    passed = [lint.id for lint in all_lints() if lint.id not in fired]
    lines.append(f"  passed: {', '.join(passed)}")
    return "\n".join(lines)


def sweep_table(rows: list[tuple[str, Config, ProfilePlan, list[Finding]]]) -> str:
    """One line per sweep point: what it records, its window, its reports, its lints."""
    header = ("point", "job", "recording", "window", "reports", "lints")
    lines = [header]
    for name, config, plan, findings in rows:
        reports, total = totals(config, plan)
        lints = sorted({f"{f.lint}:{f.severity}" for f in findings}) or ["ok"]
        lines.append(
            (
                name,
                config.job.name,
                f"{len(plan.recorded)} of {plan.world_size} ranks",
                plan.window,
                f"{reports} x ~{_human(plan.size.bytes_per_report)} = ~{_human(total)}",
                " ".join(lints),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
