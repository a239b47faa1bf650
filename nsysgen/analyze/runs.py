"""Which run `nsysgen analyze` reads: reports of different runs never make one world.

A Slurm setup keeps each run's reports in its own folder, job<ID>/ in the report folder; a
report's name holds its job id too (`<job>_job<ID>_...`). Given the report folder, analyze reads
the newest run (or --job-id's) and says which; given a folder whose reports come from several
jobs (copied together), the same; reports without a job id beside others that have one are
refused: which run they belong to cannot be told.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nsysgen.analyze.nccl import AnalyzeError, report_sources

RUN_FOLDER = re.compile(r"job([0-9]+)")
# EKS: fetch-reports.sh's folder of one run, named after the job's creation time.
FETCHED_RUN = re.compile(r"run-[0-9]{8}T[0-9]{6}Z")
JOB_IN_NAME = re.compile(r"^(?P<job>.+?)_job(?P<id>[0-9]+)(?:_|$)")


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


def _name_of(source: tuple[Path | None, Path | None]) -> str:
    report, export = source
    path = report or export
    assert path is not None
    return path.name.split(".")[0]


def _jobs_of(path: Path) -> dict[str | None, list[str]]:
    """Report stems by the job id in their names (None: no job id)."""
    by_job: dict[str | None, list[str]] = {}
    for source in report_sources(path):
        stem = _name_of(source)
        match = JOB_IN_NAME.match(stem)
        by_job.setdefault(match.group("id") if match else None, []).append(stem)
    return by_job


def _job_name(stems: list[str]) -> str | None:
    names = {m.group("job") for m in map(JOB_IN_NAME.match, stems) if m}
    return names.pop() if len(names) == 1 else None


def _run_folder(path: Path, job_id: str | None, notes: list[str]) -> Path:
    """In a report folder of runs (Slurm's job<ID>/, EKS's fetched run-<created>/): the run to
    read, the newest unless --job-id; `notes` says which and what was left out."""
    runs = {
        m.group(1): p for p in path.iterdir() if (m := RUN_FOLDER.fullmatch(p.name)) and p.is_dir()
    }
    fetched = sorted(p for p in path.iterdir() if FETCHED_RUN.fullmatch(p.name) and p.is_dir())
    if fetched and not runs and job_id is None:
        if len(fetched) > 1:
            others = ", ".join(p.name for p in fetched[:-1])
            notes.append(
                f"{len(fetched)} runs in {path}: analysing {fetched[-1].name} (the newest); "
                f"not read: {others} (pass one run's folder for another)"
            )
        return fetched[-1]
    if not runs:
        return path
    if job_id is not None and job_id not in runs:
        listed = ", ".join(f"job{k}" for k in sorted(runs, key=int))
        raise AnalyzeError(f"--job-id {job_id}: no run of it in {path} (runs: {listed})")
    chosen = job_id or max(runs, key=int)
    if len(runs) > 1:
        others = ", ".join(f"job{k}" for k in sorted(runs, key=int) if k != chosen)
        which = "the newest" if job_id is None else "--job-id's"
        notes.append(
            f"{len(runs)} runs in {path}: analysing job{chosen} ({which}); not read: "
            f"{others} (--job-id ID for another)"
        )
    return runs[chosen]


def select(path: Path, job_id: str | None) -> Run:
    if job_id is not None and not job_id.isdigit():
        raise AnalyzeError(f"--job-id {job_id}: not a Slurm job id (allowed: digits)")
    if not path.exists():
        raise AnalyzeError(f"{path}: no such file or folder")
    notes: list[str] = []
    if path.is_dir() and not any(path.glob("*.nsys-rep")) and not any(path.glob("*.sqlite")):
        path = _run_folder(path, job_id, notes)
    by_job = _jobs_of(path) if path.is_dir() else {}
    if len(by_job) > 1 or (job_id is not None and by_job and job_id not in by_job):
        if None in by_job:
            raise AnalyzeError(
                f"{path}: reports of several runs, some without a job id in their names "
                f"({', '.join(sorted(by_job[None])[:3])}): move each run's reports into a "
                "folder of its own"
            )
        ids = sorted((k for k in by_job if k is not None), key=int)
        if job_id is not None and job_id not in by_job:
            raise AnalyzeError(
                f"--job-id {job_id}: no report of it in {path} (jobs: {', '.join(ids)})"
            )
        chosen = job_id or ids[-1]
        notes.append(
            f"reports of {len(ids)} jobs in {path}: analysing job {chosen}'s "
            f"({len(by_job[chosen])}); not read: "
            + ", ".join(f"job {k} ({len(by_job[k])})" for k in ids if k != chosen)
            + " (--job-id ID for another)"
        )
        stems = by_job[chosen]
        return Run(path, chosen, _job_name(stems), len(stems), tuple(notes), only=chosen)
    stems = [s for group in by_job.values() for s in group] or [path.name.split(".")[0]]
    ids = [k for k in by_job if k is not None]
    own = RUN_FOLDER.fullmatch(path.name) if path.is_dir() else None
    found = ids[0] if len(ids) == 1 else (own.group(1) if own else None)
    return Run(path, found, _job_name(stems), len(stems), tuple(notes))
