"""One expected report: found, salvaged from a leftover capture, read and checked."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from nsysgen.reports.contract import Expect
from nsysgen.shipped.verify.checks import check_contents
from nsysgen.shipped.verify.contents import Contents, read_contents
from nsysgen.shipped.verify.model import (
    STATE_DIR,
    Finding,
)
from nsysgen.shipped.verify.names import report_name
from nsysgen.shipped.verify.steps import never_opened
from nsysgen.shipped.verify.tools import Tools, convert, export_sqlite


def _expected_name(
    expect: Expect, entry: dict[str, Any], job_id: str | None, node: str | None
) -> str | None:
    """The report's file name without suffix, when every part of it is known."""
    fmt = entry.get("name")
    if fmt is None or (expect["job_in_name"] and not job_id) or ("{node}" in fmt and not node):
        return None
    return str(fmt.format(job=job_id, node=node))


def _state_dirs(report_dir: Path, entry: dict[str, Any]) -> list[Path]:
    """nsys's TMPDIR of the entry's task (Slurm: task<N>) or pod (EKS: the pod's name, which
    JobSet follows with a random suffix) under the run's .nsysgen/."""
    state = report_dir / STATE_DIR
    if state.is_symlink() or not state.is_dir():
        return []  # a link is never followed: it could lead anywhere on the machine
    pod = entry.get("pod")
    if pod is None:
        task = state / f"task{entry['task']}"
        return [task] if task.is_dir() and not task.is_symlink() else []
    found = [
        d
        for d in state.iterdir()
        if d.is_dir() and not d.is_symlink() and (d.name == pod or d.name.startswith(pod + "-"))
    ]
    return sorted(found, key=lambda d: d.stat().st_mtime, reverse=True)  # a retried pod's newest


WALK_LIMIT = 10_000  # entries looked at in a task's temp folder: nsys leaves a handful


def _leftovers(state: Path) -> list[Path]:
    """The .qdstrm files under a task's temp folder, sorted: links neither followed nor taken,
    and no more than WALK_LIMIT entries looked at (a folder planted there is not searched
    whole)."""
    found: list[Path] = []
    seen = 0
    for root, dirs, names in os.walk(state, followlinks=False):
        seen += len(dirs) + len(names)
        found += [
            Path(root) / name
            for name in names
            if name.endswith(".qdstrm") and not (Path(root) / name).is_symlink()
        ]
        if seen > WALK_LIMIT:
            break
    return sorted(found)


def _salvage(
    expect: Expect,
    entry: dict[str, Any],
    qdstrms: list[Path],
    report_dir: Path,
    job_id: str | None,
    name: str | None,
    tools: Tools,
    finding: Finding,
) -> Path | None:
    """Convert a .qdstrm left by a killed nsys (in the report folder, or in the task's temp dir
    under .nsysgen/) into the report; None if there is none or it does not convert."""
    salvage = qdstrms[:1]
    for state in _state_dirs(report_dir, entry):
        if not salvage:
            salvage = _leftovers(state)[:1]
    if not salvage:
        return None
    source = salvage[0]
    target = (
        source.with_suffix(".nsys-rep")
        if source.parent == report_dir
        else report_dir / f"{name or report_name(source)}.nsys-rep"
    )
    why = convert(tools, source, target)
    if why:
        finding.status = "unreadable"
        finding.report = str(source)
        finding.problems.append(f"only a .qdstrm, which does not convert: {why}")
        finding.causes.append(
            "nsys was killed while capturing or writing (time limit or cancel: see README, "
            "Teardown)"
        )
        return None
    finding.notes.append(
        f"converted leftover {source.name} with QdstrmImporter of nsys "
        f"{tools.version or expect['nsys_version']}"
    )
    return target


HELPER_LOG = "helper.log"  # what the step helper said, in the task's folder (nsys-exec)
HELPER_LINES = 6  # the most of it given


def helper_said(report_dir: Path, entry: dict[str, Any]) -> list[str]:
    """What the step helper of the entry's task said (each line once, in order): the helper's
    own reason where its window is not as asked."""
    said: list[str] = []
    for state in _state_dirs(report_dir, entry):
        try:
            lines = (state / HELPER_LOG).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in lines.splitlines():
            _, _, text = line.partition(" nsysgen: ")
            if text and f"the step helper said: {text}" not in said:
                said.append(f"the step helper said: {text}")
    return said[:HELPER_LINES]


def check_one(
    expect: Expect,
    entry: dict[str, Any],
    mine: list[Path],
    report_dir: Path,
    job_id: str | None,
    node_name: str | None,
    tools: Tools,
    presence_only: bool,
) -> Finding:
    node = f"{node_name} ({entry['node']})" if node_name else f"node index {entry['node']}"
    finding = Finding(label=entry["label"], node=node, status="ok")
    reps = [p for p in mine if p.suffix == ".nsys-rep"]
    qdstrms = [p for p in mine if p.suffix == ".qdstrm"]
    name = _expected_name(expect, entry, job_id, node_name)
    report = reps[0] if reps else None
    if report is None:
        report = _salvage(expect, entry, qdstrms, report_dir, job_id, name, tools, finding)
        if finding.status != "ok":
            return finding
    if report is None:
        finding.status = "missing"
        finding.report = f"{name}.nsys-rep" if name else None
        finding.problems.append("no report")
        finding.causes.append(never_opened(expect))
        finding.causes.append("or the task was killed before nsys wrote anything")
        if expect.get("cut_off"):
            finding.causes.append(expect["cut_off"])
        return finding
    finding.report = report.name
    for extra in reps[1:]:
        finding.notes.append(f"also matches {extra.name}")
    if report.stat().st_size == 0:
        finding.status = "empty"
        finding.problems.append("the report is empty (0 bytes)")
        finding.causes.append("nsys was killed while writing it")
        return finding
    if presence_only:
        return finding
    sqlite_file, why = export_sqlite(tools, report)
    if sqlite_file is None:
        finding.status = "unreadable"
        finding.problems.append(f"not readable by nsys {tools.version}: {why}")
        finding.causes.append("a truncated report: nsys was killed while writing it")
        return finding
    contents = _contents(sqlite_file, finding)
    if contents is None:
        return finding
    checked = check_contents(expect, contents, entry["collectors"])
    finding.status = checked.status
    finding.problems += checked.problems
    finding.causes += checked.causes
    finding.notes += checked.notes
    finding.numbering += checked.numbering
    return finding


def _contents(sqlite_file: Path, finding: Finding) -> Contents | None:
    """The export's contents, or None with the finding made unreadable and why."""
    try:
        return read_contents(sqlite_file)
    except sqlite3.Error as error:
        why = f"its SQLite export is unreadable ({error})"
    except (TypeError, ValueError, OverflowError) as error:
        # A value of another type than nsys writes: written or edited by something else.
        why = (
            f"its SQLite export holds a value of a type nsys does not write "
            f"({type(error).__name__}: {error})"
        )
    finding.status = "unreadable"
    finding.problems.append(why)
    return None


def extras(expect: Expect, files: list[Path]) -> list[Finding]:
    findings = []
    generic = expect["generic_regex"]
    for path in files:
        if path.suffix == ".qdstrm" and path.with_suffix(".nsys-rep") not in files:
            pass
        elif path.suffix == ".qdstrm":
            continue  # the .nsys-rep of the same name is the one reported
        finding = Finding(label="extra", node="", status="extra", report=path.name)
        match = re.fullmatch(generic, report_name(path)) if generic else None
        values = {k: v for k, v in (match.groupdict() if match else {}).items() if v}
        if match:
            who = values.get("SLURM_PROCID") or values.get("SLURM_NODEID") or "?"
            finding.node = values.get("SLURMD_NODENAME", "")
            finding.problems.append(f"task {who} recorded but should not")
            finding.causes.append("the wrapper's rank selection differs from this setup's")
        else:
            finding.problems.append("not a report name of this setup")
            finding.causes.append("a stray file in the report folder")
        findings.append(finding)
    return findings
