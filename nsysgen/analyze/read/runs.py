"""Which run `nsysgen analyze` reads: reports of different runs never make one world.

The choice is nsysgen/reports/runs.py's, the one the shipped verifier makes too (a folder's own
reports, else its newest run folder job<ID>/ or run-<created>/, else --job-id's; in the folder
read, one job's reports). What analyze adds: it names what it left out in its own words, and it
refuses reports without a job id beside others that have one, whose run cannot be told (the
verifier, which knows the setup's report names, reports those as unexpected files instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.reports.runs import JOB_IN_NAME, RunChoice, RunError, choose_run, job_of, report_stem


@dataclass(frozen=True)
class Run:
    """The reports to read: a folder or file, and the job id its report names must hold."""

    path: Path
    job_id: str | None  # the run's Slurm job id, where known
    job_name: str | None  # from the report names (what the setup named its job)
    reports: int
    notes: tuple[str, ...] = field(default=())
    only: str | None = None  # read only the reports whose names hold this job id

    def label(self) -> str:
        """What every figure and the summary say they show."""
        job = f"job {self.job_name}" if self.job_name else "reports"
        run = f", run {self.job_id}" if self.job_id else ""
        return f"{job}{run}, {self.reports} report(s)"


def _job_name(stems: tuple[str, ...] | list[str]) -> str | None:
    names = {m.group("job") for m in map(JOB_IN_NAME.match, stems) if m}
    return names.pop() if len(names) == 1 else None


def _runs_note(path: Path, choice: RunChoice, job_id: str | None, loose: bool) -> str:
    """What was read of a report folder's runs, and which were not."""
    if choice.fetched:
        names = sorted(choice.others)
        return (
            f"{len(names) + 1} runs in {path}: analysing {choice.folder.name} (the newest); "
            f"not read: {', '.join(names)} (pass one run's folder for another)"
        )
    listed = ", ".join(f"job{k}" for k in sorted(choice.others, key=int))
    if loose:  # the folder's own reports, and run folders beside them
        return (
            f"{path} holds reports and run folders: analysing its reports; not read: {listed} "
            "(pass a run's folder for one)"
        )
    which = "the newest" if job_id is None else "--job-id's"
    return (
        f"{len(choice.others) + 1} runs in {path}: analysing job{choice.job_id} ({which}); "
        f"not read: {listed} (--job-id ID for another)"
    )


def select(path: Path, job_id: str | None) -> Run:
    if job_id is not None and not job_id.isdigit():
        raise AnalyzeError(f"--job-id {job_id}: not a Slurm job id (allowed: digits)")
    if not path.exists():
        raise AnalyzeError(f"{path}: no such file or folder")
    if not path.is_dir():  # one report or export, read as given
        stem = report_stem(path) or path.name.split(".")[0]
        return Run(path, job_of(stem), _job_name([stem]), 1)
    try:
        choice = choose_run(path, job_id)
    except RunError as error:
        raise AnalyzeError(str(error)) from None
    notes: list[str] = []
    if choice.others:
        notes.append(_runs_note(path, choice, job_id, loose=choice.folder == path))
    if choice.unknown:
        raise AnalyzeError(
            f"{choice.folder}: reports of several runs, some without a job id in their names "
            f"({', '.join(sorted(choice.unknown)[:3])}): move each run's reports into a "
            "folder of its own"
        )
    names = sorted({m.group("job") for m in map(JOB_IN_NAME.match, choice.stems) if m})
    if len(names) > 1:
        raise AnalyzeError(
            f"{choice.folder}: reports of {len(names)} jobs named {', '.join(names[:3])} under "
            f"one job id ({choice.job_id}): they are not one run; move each job's reports into "
            "a folder of its own"
        )
    only = None
    if choice.other_jobs:
        ids = sorted([*choice.other_jobs, str(choice.job_id)], key=int)
        notes.append(
            f"reports of {len(ids)} jobs in {choice.folder}: analysing job {choice.job_id}'s "
            f"({len(choice.stems)}); not read: "
            + ", ".join(f"job {k} ({len(choice.other_jobs[k])})" for k in ids if k != choice.job_id)
            + " (--job-id ID for another)"
        )
        only = choice.job_id
    return Run(
        choice.folder,
        choice.job_id,
        _job_name(choice.stems),
        len(choice.stems),
        tuple(notes),
        only=only,
    )
