"""The GPU of the bench/gpu CPU dry runs (tests/bench/): in a program that the stand-in nsys
(tests/bench/standin/bin/nsys) runs, real torch's CUDA profiler and NVTX calls are recorded
instead of made, and what nsys would capture between cudaProfilerStart and Stop is written to
STANDIN_REPORT as the NVTX_EVENTS table of an nsys SQLite export (push/pop ranges 59, marks 34),
which the proofs' checks read as they read the device's exports; and, as its GPU work, one row
of CUPTI_ACTIVITY_KIND_KERNEL per optimizer step taken while recording (a CPU launches no
kernels; the verifier asks for some in a CUDA-traced report).

nsysgen's own sitecustomize (nsysgen-site, first on the recorded task's PYTHONPATH) runs this one
first, as it runs an image's. Without STANDIN_REPORT (every process that nsys does not start)
nothing happens and torch is not imported.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from typing import Any

_report = os.environ.get("STANDIN_REPORT")
_recording = [False]
_open: list[tuple[int, str]] = []
_rows: list[tuple[int, int | None, int, str]] = []
_kernels: list[tuple[int, int]] = []


def _write() -> None:
    assert _report is not None
    tid = (os.getpid() << 24) | 1
    with sqlite3.connect(_report) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS NVTX_EVENTS (start INTEGER, end INTEGER, eventType "
            "INTEGER, text TEXT, textId INTEGER, globalTid INTEGER, domainId INTEGER)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS StringIds (id INTEGER, value TEXT)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
            "globalPid INTEGER, shortName INTEGER)"
        )
        db.execute("INSERT OR IGNORE INTO StringIds VALUES (0, 'standin_optimizer_step')")
        # The whole capture again at each stop.
        db.execute("DELETE FROM NVTX_EVENTS")
        db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
        db.executemany(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, NULL, ?, 0)",
            [(start, end, kind, text, tid) for start, end, kind, text in _rows],
        )
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 0)",
            [(start, end, tid & ~0xFFFFFF) for start, end in _kernels],
        )


class _Cudart:
    def cudaProfilerStart(self) -> int:  # noqa: N802 - CUDA's name
        _recording[0] = True
        return 0

    def cudaProfilerStop(self) -> int:  # noqa: N802 - CUDA's name
        _recording[0] = False
        _write()
        return 0


def _push(text: object) -> int:
    _open.append((time.perf_counter_ns(), str(text)))
    return len(_open) - 1


def _pop() -> int:
    if _open:
        start, text = _open.pop()
        if _recording[0]:  # nsys keeps a range that ends inside the capture
            _rows.append((start, time.perf_counter_ns(), 59, text))
    return len(_open)


def _mark(text: object) -> None:
    if _recording[0]:
        _rows.append((time.perf_counter_ns(), None, 34, str(text)))


def _optimizer_stepped(optimizer: object, args: object, kwargs: object) -> None:
    if _recording[0]:
        now = time.perf_counter_ns()
        _kernels.append((now, now + 1000))


def _install() -> None:
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    cuda: Any = torch.cuda
    started = cuda.is_initialized

    def is_initialized() -> bool:
        # CUDA is "started" for the program and nsysgen's helper (which opens windows only in a
        # process that uses CUDA); torch's own code (torch.compile) sees the CPU it runs on.
        caller = str(sys._getframe(1).f_globals.get("__name__", ""))
        return bool(started()) if caller.startswith("torch") else True

    cuda.is_initialized = is_initialized
    cuda.is_current_stream_capturing = lambda: False
    cuda.synchronize = lambda *args, **kwargs: None
    cuda.cudart = _Cudart
    cuda.nvtx.range_push = _push
    cuda.nvtx.range_pop = _pop
    cuda.nvtx.mark = _mark
    register_optimizer_step_post_hook(_optimizer_stepped)


if _report:
    _install()
