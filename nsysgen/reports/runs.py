"""Which run of a report folder is read: one run, never two mixed, the newest by default.

The one rule that `nsysgen analyze` and the shipped verifier both follow:

- A folder that holds reports itself (one run's folder, reports copied by hand) is read; run
  folders beside them are named, not read.
- A folder without reports is a report folder of runs: Slurm's job<ID>/ (each run writes its
  own, nsysgen/targets/expect.py RUN_FOLDER), or the run-<created>/ folders fetch-reports.sh
  copies EKS runs into. The newest is read (the highest job id; the latest creation time), or
  the job --job-id names.
- In the folder read, reports whose names hold another job's id (several jobs' reports copied
  together) are named, not read: the run is the newest job's, or --job-id's, or the job of the
  folder's own name (job<ID>/).

A report's job id is read from its name: through the setup's own -o pattern where it is known
(the verifier reads it from the run contract), else as the `_job<ID>_` that every nsysgen Slurm
report name holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

RUN_FOLDER = re.compile(r"job([0-9]+)")
# EKS: fetch-reports.sh copies one run, the reports written since the job was created, into
# DEST/run-<creation time>/.
FETCHED_RUN = re.compile(r"run-[0-9]{8}T[0-9]{6}Z")
JOB_IN_NAME = re.compile(r"^(?P<job>.+?)_job(?P<id>[0-9]+)(?:_|$)")
# What a run's reports are on disk: nsys's reports, a capture a killed nsys left, exports.
REPORT_SUFFIXES = (".nsys-rep", ".qdstrm", ".sqlite")


class RunError(Exception):
    """No run can be chosen as asked: the message says why, naming --job-id or the folder."""


@dataclass(frozen=True)
class RunChoice:
    """The run to read, and what was left out."""

    folder: Path
    job_id: str | None  # the run's Slurm job id, where known
    stems: tuple[str, ...]  # its reports' names (without suffix), sorted
    others: dict[str, Path] = field(default_factory=dict)  # other runs' folders, not read
    other_jobs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # reports, not read
    unknown: tuple[str, ...] = ()  # reports without a job id beside reports with one
    fetched: bool = False  # `others` are EKS's run-<created>/ folders (keyed by name)


def report_stem(path: Path) -> str | None:
    """The report's name without its suffix; None for what is not a report (hidden files are
    exports in progress, nsysgen/reports/export.py)."""
    if path.name.startswith("."):
        return None
    suffix = next((s for s in REPORT_SUFFIXES if path.name.endswith(s)), None)
    return path.name[: -len(suffix)] if suffix else None


def report_stems(folder: Path) -> list[str]:
    """The reports in `folder` (each once, whatever files it has), sorted."""
    stems = {report_stem(p) for p in folder.iterdir() if p.is_file()}
    return sorted(s for s in stems if s)


def job_of(stem: str, pattern: str | None = None) -> str | None:
    """The Slurm job id in a report's name: `pattern` is the setup's -o pattern as a regex, its
    job id a group SLURM_JOB_ID; without one, the name's `_job<ID>_`."""
    if pattern is not None:
        match = re.fullmatch(pattern, stem) if pattern else None
        job = match.groupdict().get("SLURM_JOB_ID") if match else None
        return job if job and job.isdigit() else None
    found = JOB_IN_NAME.match(stem)
    return found.group("id") if found else None


def run_folders(folder: Path) -> tuple[dict[str, Path], bool]:
    """The run folders in a report folder: Slurm's by job id, or else EKS's fetched runs by
    name (True)."""
    dirs = [p for p in folder.iterdir() if p.is_dir()]
    runs = {m.group(1): p for p in dirs if (m := RUN_FOLDER.fullmatch(p.name))}
    if runs:
        return runs, False
    return {p.name: p for p in dirs if FETCHED_RUN.fullmatch(p.name)}, True


def newest(runs: dict[str, Path], fetched: bool) -> str:
    return max(runs) if fetched else max(runs, key=int)


def choose_run(folder: Path, job_id: str | None, pattern: str | None = None) -> RunChoice:
    """The run to read at `folder` (a folder), by the rule above; `pattern`: job_of's."""
    if job_id is not None and not job_id.isdigit():
        raise RunError(f"--job-id {job_id}: not a Slurm job id (allowed: digits)")
    if not folder.is_dir():
        raise RunError(f"report folder {folder} does not exist")
    stems = report_stems(folder)
    runs, fetched = run_folders(folder)
    if stems or not runs:
        return _in_folder(folder, stems, job_id, pattern, runs, fetched)
    if fetched:
        if job_id is not None:
            raise RunError(
                f"--job-id {job_id}: the runs in {folder} are fetched runs, named by when they "
                "were created (pass --reports DIR/run-... for one)"
            )
        chosen = newest(runs, fetched)
    else:
        if job_id is not None and job_id not in runs:
            listed = ", ".join(f"job {k}" for k in sorted(runs, key=int))
            raise RunError(f"--job-id {job_id}: no run of it in {folder} (runs there: {listed})")
        chosen = job_id or newest(runs, fetched)
    others = {k: v for k, v in runs.items() if k != chosen}
    inner = _in_folder(runs[chosen], report_stems(runs[chosen]), job_id, pattern, {}, fetched)
    return RunChoice(
        inner.folder, inner.job_id, inner.stems, others, inner.other_jobs, inner.unknown, fetched
    )


def _in_folder(
    folder: Path,
    stems: list[str],
    job_id: str | None,
    pattern: str | None,
    runs: dict[str, Path],
    fetched: bool,
) -> RunChoice:
    """The run among the reports in `folder` itself: one job's, where their names hold
    several; `runs`: run folders beside them, not read."""
    own = RUN_FOLDER.fullmatch(folder.name)
    if own and job_id is not None and job_id != own.group(1):
        raise RunError(f"--job-id {job_id}: {folder} is the folder of job {own.group(1)}")
    by_job: dict[str | None, list[str]] = {}
    for stem in stems:
        by_job.setdefault(job_of(stem, pattern), []).append(stem)
    ids = sorted((k for k in by_job if k is not None), key=int)
    if job_id is not None and ids and job_id not in by_job:
        raise RunError(f"--job-id {job_id}: no report of it in {folder} (jobs: {', '.join(ids)})")
    chosen = job_id or (own.group(1) if own else None) or (ids[-1] if ids else None)
    if chosen is None or chosen not in by_job:
        return RunChoice(folder, chosen, tuple(stems), runs, {}, (), fetched)
    others = {k: tuple(v) for k, v in by_job.items() if k is not None and k != chosen}
    unknown = tuple(by_job.get(None, ()))
    return RunChoice(folder, chosen, tuple(by_job[chosen]), runs, others, unknown, fetched)
