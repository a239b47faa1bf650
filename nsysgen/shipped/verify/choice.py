"""The run a check reads (nsysgen/reports/runs.py's rule, which `nsysgen analyze` follows too),
and what the check says of the runs it did not read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsysgen.reports.contract import Expect
from nsysgen.reports.runs import RunError, choose_run
from nsysgen.shipped.verify.model import STATE_DIR, BadInput
from nsysgen.shipped.verify.names import expected_reports, report_files, report_name


@dataclass
class Run:
    """The one run a check reads: its folder and its Slurm job id (None: not a Slurm job)."""

    folder: Path
    job_id: str | None
    others: dict[str, Path] = field(default_factory=dict)  # the other runs: job id or name
    fetched: bool = False  # `others` are EKS's fetched runs, by their folders' names


def select_run(expect: Expect, reports: Path, job_id: str | None) -> Run:
    """The run to check in `reports`: the report folder (its runs' folders are in it), one
    run's folder, or a folder of reports copied without their run folder. Without --job-id,
    the newest run; the others are listed, never read."""
    if not reports.is_dir():
        raise BadInput(f"report folder {reports} does not exist (pass --reports DIR)")
    try:
        choice = choose_run(reports, job_id, expect["generic_regex"])
    except RunError as error:
        raise BadInput(str(error)) from None
    if choice.job_id is None and expect["job_in_name"]:
        raise BadInput(
            f"no report or run of job {expect['job']} in {reports}: pass --reports DIR "
            "(the report folder, or one run's folder job<ID>) or --job-id ID"
        )
    return Run(choice.folder, choice.job_id, choice.others, choice.fetched)


def other_runs_note(expect: Expect, run: Run) -> str | None:
    """One line on the runs not checked, with their report counts: what --job-id (Slurm) or
    --reports (EKS's fetched runs) can pick."""
    if not run.others:
        return None
    wanted = sum(1 for _ in expected_reports(expect))

    def count(folder: Path) -> str:
        return f"{len({report_name(p) for p in report_files(folder)})} of {wanted} reports"

    if run.fetched:  # EKS: runs by their folder's name, which sorts by time
        counts = [f"{name} ({count(run.others[name])})" for name in sorted(run.others)]
        newest = all(name < run.folder.name for name in run.others)
        which = f"the newest run, {run.folder.name}" if newest else run.folder.name
        return (
            f"checked {which}; other runs here, not read: {', '.join(counts)} "
            "(pass --reports DIR/run-... to check one)"
        )
    counts = [f"job {job} ({count(run.others[job])})" for job in sorted(run.others, key=int)]
    newest = all(int(job) < int(run.job_id or 0) for job in run.others)
    which = f"the newest run, job {run.job_id}" if newest else f"job {run.job_id}"
    return (
        f"checked {which}; other runs here, not read: {', '.join(counts)} "
        "(pass --job-id ID to check one)"
    )


def node_names(run_dir: Path) -> dict[int, str]:
    nodes_file = run_dir / STATE_DIR / "nodes"
    if nodes_file.is_file():
        return dict(enumerate(nodes_file.read_text(encoding="utf-8").split()))
    return {}
