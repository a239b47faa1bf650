"""The map step of `nsysgen analyze`: each report to its export (cached) and compact tables,
in this process or on a Dask cluster (`dask.distributed`), results in report order.

A task is one report: export it with nsys unless a valid cached export exists, then read its
NCCL calls and reduce it to per-rank tables (nsysgen/analyze/read/report.py). A worker holds one
report at a time, so its memory does not grow with the number of reports; the reduction over reports
(stragglers, summary.json, CSVs) runs in the calling process on the compact tables. What is
kept between runs (exports, results, and their keys) is nsysgen/analyze/read/cache.py's: a report
whose result is cached is neither exported nor read again, and when every report's is, no Dask
cluster is started or asked.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.cache import (
    cache_state,
    key_file,
    load_reduced,
    reduced_key,
    report_key,
    save_reduced,
)
from nsysgen.analyze.read.discovery import report_sources, unpack_hint
from nsysgen.analyze.read.export import export_sqlite, find_nsys
from nsysgen.analyze.read.head_start import HeadStart
from nsysgen.analyze.read.report import Reduced, read_export, refuse_incomplete


@dataclass(frozen=True)
class Task:
    """One report to analyse: its .nsys-rep (None: an export given alone) and its export."""

    report: Path | None
    export: Path
    nsys: str | None  # set when the export must be (re)made
    warning: str = ""
    cached: Reduced | None = None  # the result, from the cache: nothing left to do
    result_key: dict[str, Any] | None = None  # the cached result's key, when cached


def _found(path: Path) -> str:
    """What the folder holds instead of reports: the files skipped, and for archived reports
    the command that unpacks them."""
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else []
    if not files:
        return "; the folder is empty" if path.is_dir() else ""
    names = ", ".join(p.name for p in files[:3]) + (", ..." if len(files) > 3 else "")
    return f"; found and skipped {len(files)} file(s) ({names}){unpack_hint(files)}"


def plan_tasks(path: Path, nsys: str | None, only: str | None = None) -> list[Task]:
    """A task per report at `path` (with `only`: whose name holds job id `only`), in name
    order; finds nsys only where an export is due."""
    tasks = []
    tool: str | None = None
    for report, export in report_sources(path):
        if only is not None and f"_job{only}_" not in f"{(report or export or path).stem}_":
            continue
        if report is None:
            assert export is not None
            result = reduced_key(None, export, None)
            cached = load_reduced(export, result)
            tasks.append(Task(None, export, None, cached=cached, result_key=result))
            continue
        target = export or report.with_suffix(".sqlite")
        if export is None:
            # Never exported: nothing cached to check, so the report is not read here (the
            # worker that exports it keys it; at 2,000 reports this read was 1.5 s of this
            # process's time before any worker started).
            tool = tool or find_nsys(nsys)
            tasks.append(Task(report, target, tool))
            continue
        key = report_key(report)
        state = cache_state(report, export, key)
        if state == "valid":
            result = reduced_key(report, target, key)
            cached = load_reduced(report, result)
            tasks.append(Task(report, target, None, cached=cached, result_key=result))
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
        raise AnalyzeError(f"{path}: no .nsys-rep or .sqlite reports{_found(path)}")
    # Exports read as they are, checked here, before a cluster starts or anything is written:
    # one found damaged later, on a worker, would stop the run halfway, other reports done.
    refuse_incomplete([task.export for task in tasks if task.nsys is None])
    return tasks


def result_key(task: Task) -> dict[str, Any] | None:
    """The key its result is cached under now (after the run: a fresh export's too); None for
    a task whose result is not cached (an old export read without nsys)."""
    if task.warning:
        return None
    if task.result_key is not None:
        return task.result_key
    if task.report is None:
        return reduced_key(None, task.export, None)
    return reduced_key(task.report, task.export, report_key(task.report))


def _export(task: Task) -> tuple[Path, dict[str, Any] | None]:
    """The task's export, made now if due (nsys runs as a subprocess: another thread's Python
    work goes on meanwhile), and the report's key when it was made."""
    if task.report is not None and task.nsys is not None:
        export = export_sqlite(task.report, task.nsys, force=True)
        key = report_key(task.report)
        key_file(task.report).write_text(json.dumps(key, sort_keys=True))
        return export, key
    return task.export, None


def _reduce(task: Task, export: Path, key: dict[str, Any] | None) -> Reduced:
    """Read one export, and cache the result."""
    reduced = read_export(export)
    if task.report is not None:
        key = key or report_key(task.report)
        if cache_state(task.report, export, key) != "valid":
            return reduced  # the report changed meanwhile: nothing to cache
    save_reduced(task.report or export, reduced_key(task.report, export, key), reduced)
    return reduced


def run_task(task: Task) -> Reduced | AnalyzeError:
    """Export (if due) and reduce one report, and cache the result: what a worker runs. A
    user's error (nsys cannot export the report, its export is damaged) is returned, for the
    caller to raise: raised on a worker, Dask would log it there as a failed task, traceback
    and all, onto the terminal of a local cluster's user."""
    try:
        return _reduce(task, *_export(task))
    except AnalyzeError as exc:
        return exc


def in_turn(tasks: list[Task]) -> Iterator[Reduced]:
    """Every task's result in this process, in order, the next report's export running (in a
    thread, as nsys's own process) while this one is read: the reading hides behind the
    exports, which are the floor."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(_export, tasks[0]) if tasks else None
        for i, task in enumerate(tasks):
            assert ahead is not None
            export, key = ahead.result()
            ahead = pool.submit(_export, tasks[i + 1]) if i + 1 < len(tasks) else None
            yield _reduce(task, export, key)


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
    results = [task.cached for task in tasks]
    for _ in (r for r in results if r is not None):
        progress.step()
    due = [i for i, task in enumerate(tasks) if task.cached is None]
    external = where.scheduler_file is not None or where.address is not None
    workers = where.workers or min(os.cpu_count() or 1, len(due))
    if not due:
        pass  # every result is cached: no cluster to start or ask
    elif where.serial or (not external and workers <= 1):
        # One worker: a cluster would add start-up and nothing else.
        for i, result in zip(due, in_turn([tasks[i] for i in due]), strict=True):
            results[i] = result
            progress.step()
    else:
        _require_distributed()
        todo = [tasks[i] for i in due]
        # A local cluster starts in about 2 s with the cores idle: this process's threads
        # export the first reports meanwhile (nsysgen/analyze/read/head_start.py).
        exportable = [i for i, t in enumerate(todo) if t.report is not None and t.nsys is not None]
        head = HeadStart(
            [todo[i] for i in exportable], _export, 0 if external else workers, (AnalyzeError,)
        )
        try:
            with _client(where, workers) as client:
                for j, (export, _) in head.finish().items():
                    todo[exportable[j]] = _exported(todo[exportable[j]], export)
                done = gather_reports(client, todo, progress)
        finally:
            head.finish()
        for i, result in zip(due, done, strict=True):
            results[i] = result
    finished = [r for r in results if r is not None]
    assert len(finished) == len(tasks)
    return finished


def _exported(task: Task, export: Path) -> Task:
    """The task of a report exported already (keyed too): what is left is to read it."""
    return Task(task.report, export, None, task.warning)


def _require_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise AnalyzeError(
            "dask.distributed is not installed (allowed: pip install 'nsysgen[analyze]', or "
            "--serial)"
        ) from None


@contextlib.contextmanager
def _client(where: Where, workers: int) -> Iterator[Any]:
    from distributed import Client, LocalCluster

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
            # No dashboard, and the scheduler's own HTTP endpoint on a free port: its default
            # (8787) is taken by any other cluster on the machine, and Dask then warns.
            dashboard_address=":0",
            scheduler_kwargs={"dashboard": False},
            silence_logs=40,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def gather_reports(client: Any, tasks: list[Task], progress: Progress) -> list[Reduced]:
    """Run the tasks on the client's cluster; each result is taken as it comes and released on
    its worker, so a worker holds the results of its running tasks only."""
    from distributed import as_completed

    futures = client.map(run_task, tasks, pure=False)
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[Reduced | None] = [None] * len(tasks)
    for future in as_completed(futures):
        result = future.result()
        future.release()
        if isinstance(result, AnalyzeError):
            raise result  # the client's exit cancels the tasks still due
        results[index[future.key]] = result
        progress.step()
    done = [r for r in results if r is not None]
    assert len(done) == len(tasks)
    return done


Mapper = Callable[[list[Task], Where, Progress], list[Reduced]]
