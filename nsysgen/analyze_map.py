"""The map step of `nsysgen analyze`: each report to its export (cached) and compact tables,
in this process or on a Dask cluster (`dask.distributed`), results in report order.

A task is one report: export it with nsys unless a valid cached export exists, then read its
NCCL calls and reduce it to per-rank tables (nsysgen/steps.py). A worker holds one report at a
time, so its memory does not grow with the number of reports; the reduction over reports
(stragglers, summary.json, CSVs) runs in the calling process on the compact tables.

Cache: `x.nsys-rep` is exported to `x.sqlite` next to it, with `x.nsysgen-export.json` holding
the report's size, mtime (ns) and the SHA-256 of its first and last MiB. A changed report fails
that key and is exported again; an export without a key (made by hand or by an older nsysgen)
is used while it is newer than its report, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from nsysgen.analyze import (
    AnalyzeError,
    NcclCall,
    export_sqlite,
    find_nsys,
    read_calls,
    report_sources,
)
from nsysgen.steps import RankTables, reduce_report

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Task:
    """One report to analyse: its .nsys-rep (None: an export given alone) and its export."""

    report: Path | None
    export: Path
    nsys: str | None  # set when the export must be (re)made
    warning: str = ""


@dataclass(frozen=True)
class Reduced:
    name: str  # the export's stem: the report's name
    calls: list[NcclCall]
    tables: list[RankTables]


def key_file(report: Path) -> Path:
    return report.with_suffix(".nsysgen-export.json")


def report_key(report: Path) -> dict[str, Any]:
    """What identifies a report's content cheaply: size, mtime and its first and last MiB."""
    stat = report.stat()
    digest = hashlib.sha256()
    with report.open("rb") as handle:
        digest.update(handle.read(_CHUNK))
        if stat.st_size > _CHUNK:
            handle.seek(max(_CHUNK, stat.st_size - _CHUNK))
            digest.update(handle.read(_CHUNK))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256_ends": digest.hexdigest()}


def cache_state(report: Path, export: Path | None) -> str:
    """ "valid", "stale" (the report changed) or "missing"."""
    if export is None or not export.is_file():
        return "missing"
    keyed = key_file(report)
    if keyed.is_file():
        try:
            saved = json.loads(keyed.read_text())
        except (OSError, ValueError):
            return "stale"
        return "valid" if saved == report_key(report) else "stale"
    return "valid" if export.stat().st_mtime >= report.stat().st_mtime else "stale"


def plan_tasks(path: Path, nsys: str | None) -> list[Task]:
    """A task per report at `path`, in name order; finds nsys only where an export is due."""
    tasks = []
    tool: str | None = None
    for report, export in report_sources(path):
        if report is None:
            assert export is not None
            tasks.append(Task(None, export, None))
            continue
        target = export or report.with_suffix(".sqlite")
        state = cache_state(report, export)
        if state == "valid":
            tasks.append(Task(report, target, None))
            continue
        if state == "stale":
            try:
                tool = tool or find_nsys(nsys)
            except AnalyzeError:
                warning = (
                    f"warning: {target} is older than {report.name}; reading it anyway (no nsys "
                    "to export the report again)"
                )
                tasks.append(Task(None, target, None, warning))
                continue
        tool = tool or find_nsys(nsys)
        tasks.append(Task(report, target, tool))
    if not tasks:
        raise AnalyzeError(f"{path}: no .nsys-rep or .sqlite reports")
    return tasks


def run_task(task: Task) -> Reduced:
    """Export (if due) and reduce one report: what a worker runs."""
    export = task.export
    if task.report is not None and task.nsys is not None:
        export = export_sqlite(task.report, task.nsys, force=True)
        key_file(task.report).write_text(json.dumps(report_key(task.report), sort_keys=True))
    return Reduced(export.stem, read_calls(export, export.stem), reduce_report(export, export.stem))


class Progress:
    """`analysed 12/256 reports, 3.4 reports/s, ~71 s left` on a terminal, redrawn in place."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.active = self.stream.isatty() and total > 1
        self.start = time.monotonic()

    def step(self) -> None:
        self.done += 1
        if not self.active:
            return
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate else 0.0
        end = "\n" if self.done == self.total else ""
        self.stream.write(
            f"\ranalysed {self.done}/{self.total} reports, {rate:.1f} reports/s, ~{left:.0f} s left"
            + end
        )
        self.stream.flush()


@dataclass(frozen=True)
class Where:
    """Where the map runs: in this process, a local cluster of `workers`, or a scheduler."""

    workers: int = 0  # 0: as many as cores (at most one per report)
    scheduler_file: Path | None = None
    address: str | None = None
    serial: bool = False


def map_reports(tasks: list[Task], where: Where, progress: Progress) -> list[Reduced]:
    """Every task's result, in task order, wherever `where` says."""
    for task in tasks:
        if task.warning:
            print(task.warning, file=sys.stderr)
    external = where.scheduler_file is not None or where.address is not None
    workers = where.workers or min(os.cpu_count() or 1, len(tasks))
    if where.serial or (not external and workers <= 1):
        # One worker: a cluster would add start-up and nothing else.
        results = []
        for task in tasks:
            results.append(run_task(task))
            progress.step()
        return results
    with _client(where, workers) as client:
        return _gather(client, tasks, progress)


@contextlib.contextmanager
def _client(where: Where, workers: int) -> Iterator[Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise AnalyzeError(
            "dask.distributed is not installed (allowed: pip install 'nsysgen[analyze]', or "
            "--serial)"
        ) from None
    if where.scheduler_file is not None:
        if not where.scheduler_file.is_file():
            raise AnalyzeError(f"--scheduler-file {where.scheduler_file}: no such file")
        with Client(scheduler_file=str(where.scheduler_file), timeout="60s") as client:
            yield client
        return
    if where.address is not None:
        with Client(where.address, timeout="60s") as client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _gather(client: Any, tasks: list[Task], progress: Progress) -> list[Reduced]:
    from distributed import as_completed

    futures = client.map(run_task, tasks, pure=False)
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[Reduced | None] = [None] * len(tasks)
    for future in as_completed(futures):
        results[index[future.key]] = future.result()
        future.release()
        progress.step()
    done = [r for r in results if r is not None]
    assert len(done) == len(tasks)
    return done


Mapper = Callable[[list[Task], Where, Progress], list[Reduced]]
