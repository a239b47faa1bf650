"""The whole job: every expected report of the chosen run, and the files nobody expected."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nsysgen.reports.contract import Expect
from nsysgen.shipped.verify.choice import node_names, other_runs_note, select_run
from nsysgen.shipped.verify.model import (
    BadInput,
    Finding,
    Result,
)
from nsysgen.shipped.verify.names import expected_reports, job_in, report_files, report_name
from nsysgen.shipped.verify.report import check_one, extras, helper_said
from nsysgen.shipped.verify.tools import find_tools


def _teardown_cause(folder: Path | None, job_id: str | None) -> str | None:
    """What the Slurm log of the job says about how it ended, if it is in the folder."""
    if folder is None or job_id is None:
        return None
    for log in sorted(folder.glob(f"*_{job_id}.out")):
        text = log.read_text(encoding="utf-8", errors="replace")
        if "DUE TO TIME LIMIT" in text:
            return "the job hit its time limit"
        if "CANCELLED AT" in text:
            return "the job was cancelled"
    return None


def verify(
    expect: Expect,
    reports: Path,
    job_id: str | None = None,
    nsys: str | None = None,
    importer: str | None = None,
    folder: Path | None = None,
    presence_only: bool = False,
) -> Result:
    run = select_run(expect, reports, job_id)
    report_dir, job_id = run.folder, run.job_id
    files = report_files(report_dir)
    notes = [note for note in [other_runs_note(expect, run)] if note]
    # Reports of other jobs in the same folder (copied or fetched together) are not this run's:
    # they are named, never checked, and never make this run incomplete.
    foreign = [p for p in files if job_id and job_in(expect, p) not in (None, job_id)]
    if foreign:
        jobs = sorted({job_in(expect, p) or "" for p in foreign}, key=int)
        notes.append(
            f"{len(foreign)} report file(s) of other jobs in {report_dir} ({', '.join(jobs)}), "
            "not read"
        )
        files = [p for p in files if p not in foreign]
    tools = find_tools(expect, nsys, importer)
    if tools.nsys is None and not presence_only:
        raise BadInput(
            "no nsys found to read the reports: pass --nsys or set NSYS (or --presence-only "
            "to check only that every report is there and not empty)"
        )
    if presence_only:
        notes.append("--presence-only: reports were not read, their contents are not checked")
    wanted = expect["nsys_version"]
    if tools.version and not tools.version.startswith(wanted):
        notes.append(f"reports read with nsys {tools.version}; the setup's is {wanted}")
    nodes = node_names(report_dir)
    teardown = _teardown_cause(folder, job_id)
    claimed: set[Path] = set()
    findings = []
    by_stem: dict[str, list[Path]] = {}
    for path in files:
        by_stem.setdefault(report_name(path), []).append(path)
    for entry in expected_reports(expect):
        mine, node_name = _match_entry(
            entry, files, by_stem, job_id, nodes.get(entry["node"]), expect["job_in_name"]
        )
        finding = check_one(
            expect, entry, mine, report_dir, job_id, node_name, tools, presence_only
        )
        if finding.status != "ok" and teardown:
            finding.causes.insert(0, teardown)
        if finding.problems:  # the step helper's own reason, where its window is not as asked
            finding.causes += helper_said(report_dir, entry)
        claimed |= set(mine) | {p.with_suffix(".nsys-rep") for p in mine}
        findings.append(finding)
    _blame_missing_tasks(findings)
    findings.extend(extras(expect, [p for p in files if p not in claimed]))
    return Result(expect["job"], job_id, str(report_dir), wanted, findings, notes)


def _blame_missing_tasks(findings: list[Finding]) -> None:
    """When other reports of the job are there, a missing one is about its own task."""
    if any(f.status == "ok" for f in findings):
        for finding in findings:
            if finding.status == "missing":
                finding.causes.insert(
                    0,
                    "other reports of the job are there: this task failed or ran without nsys "
                    "(see its lines in the job log), or its report was moved or deleted",
                )


def _match_entry(
    entry: dict[str, Any],
    files: list[Path],
    by_stem: dict[str, list[Path]],
    job_id: str | None,
    node_name: str | None,
    job_in_name: bool,
) -> tuple[list[Path], str | None]:
    """The files of one expected report, and its node's name: as nsys wrote it into the report's
    name, else from the job's node record (job.sbatch writes it). When every part of the name is
    known, a lookup; else a match over the folder's files."""
    fmt = entry["name"]
    if fmt is not None and (job_id or not job_in_name) and (node_name or "{node}" not in fmt):
        return by_stem.get(fmt.format(job=job_id, node=node_name), []), node_name
    regex = re.compile(entry["regex"].replace("(?P<job>[0-9]+)", re.escape(job_id or "")))
    mine = [p for p in files if regex.fullmatch(report_name(p))]
    for path in mine:
        match = regex.fullmatch(report_name(path))
        if match and match.groupdict().get("node"):
            node_name = match.group("node")
    return mine, node_name
