"""A stand-in for torch that prints what a training script asks of it, one event a line
(`@@ start`, `@@ push step 3`, `@@ mark nsysgen optimizer step 3 AdamW#0`, `@@ backward`,
`@@ optimizer.step`, ...), for the step-window behaviour tests.

It keeps the parts of torch's contract that the step helper relies on: `torch.optim` optimizers
run the global optimizer step hooks around every `step()` (subclasses included), Adam-style
optimizers count steps in `state[param]["step"]` (restored by `load_state_dict`),
`torch.amp.GradScaler.step` skips the optimizer's step on inf/nan gradients, and
`torch._C._current_graph_task_id()` is not -1 while backward runs (where gradient hooks, and
with them optimizer-in-backward, run).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from torch import optim as optim


def _event(*words: object) -> None:
    # Written, not printed: the step helper reads the program's print() lines for step numbers.
    sys.stdout.write(" ".join(["@@", *map(str, words)]) + "\n")
    sys.stdout.flush()
    folder = os.environ.get("STANDIN_EVENTS")
    if folder:  # one file per rank (a launcher's worker, a Slurm task, or a process)
        rank = os.environ.get("RANK") or os.environ.get("SLURM_PROCID") or str(os.getpid())
        with Path(folder, f"events.{rank}").open("a", encoding="utf-8") as file:
            print("@@", *words, file=file)


_graph_task = [-1]


class Parameter:
    def __init__(self) -> None:
        self.hooks: list[Callable[[Parameter], None]] = []

    def register_post_accumulate_grad_hook(self, hook: Callable[[Parameter], None]) -> None:
        self.hooks.append(hook)


class _Loss:
    def __init__(self, module: _Module | None = None) -> None:
        self.module = module

    def backward(self) -> None:
        autograd.backward(self)  # as torch's Tensor.backward: through torch.autograd.backward

    def item(self) -> float:
        return 0.0

    def __truediv__(self, other: object) -> _Loss:
        return self

    def __add__(self, other: object) -> _Loss:
        return self


def _backward(loss: _Loss) -> None:
    _event("backward")
    _graph_task[0] = 1
    try:
        for param in loss.module.params if loss.module is not None else ():
            for hook in param.hooks:
                hook(param)
    finally:
        _graph_task[0] = -1


autograd = SimpleNamespace(backward=_backward)


class _Module:
    def __init__(self, *args: object, **kwargs: object) -> None:
        self.params = [Parameter(), Parameter()]

    def __call__(self, *args: object, **kwargs: object) -> _Loss:
        _report.forward()
        return _Loss(self)

    def parameters(self) -> Iterator[Parameter]:
        return iter(self.params)

    def train(self) -> None:
        pass

    def eval(self) -> None:
        pass


class _GradScaler:
    """Skips the optimizer's step while `found_inf` (as torch does on inf/nan gradients)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.found_inf = False

    def scale(self, loss: _Loss) -> _Loss:
        return loss

    def step(self, optimizer: Any, *args: object, **kwargs: object) -> None:
        if self.found_inf:
            _event("scaler.skip")
            return None
        return optimizer.step(*args, **kwargs)  # type: ignore[no-any-return]

    def update(self) -> None:
        pass


class _Report:
    """With STANDIN_REPORT set: what nsys would capture between cudaProfilerStart and Stop,
    written as the NVTX_EVENTS table of an nsys SQLite export (ranges 59, marks 34)."""

    def __init__(self) -> None:
        self.recording = False
        self.open: list[tuple[int, str]] = []
        self.rows: list[tuple[int, int | None, int, str]] = []
        self.kernels: list[int] = []  # one "kernel" per forward pass while recording

    def forward(self) -> None:
        _event("forward")
        if self.recording:
            self.kernels.append(time.perf_counter_ns())

    def push(self, label: str) -> None:
        _event("push", label)
        self.open.append((time.perf_counter_ns(), label))

    def pop(self) -> None:
        _event("pop")
        start, label = self.open.pop()
        if self.recording:
            self.rows.append((start, time.perf_counter_ns(), 59, label))

    def mark(self, label: str) -> None:
        _event("mark", label)
        if self.recording:
            self.rows.append((time.perf_counter_ns(), None, 34, label))

    def write(self) -> None:
        path = os.environ.get("STANDIN_REPORT")
        if not path:
            return
        with sqlite3.connect(path) as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS NVTX_EVENTS (start INTEGER, end INTEGER, "
                "eventType INTEGER, text TEXT, textId INTEGER, globalTid INTEGER, domainId "
                "INTEGER)"
            )
            db.execute("CREATE TABLE IF NOT EXISTS StringIds (id INTEGER, value TEXT)")
            db.execute("CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER)")
            db.executemany(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?)", [(t,) for t in self.kernels]
            )
            tid = (os.getpid() << 24) | 1
            db.executemany(
                "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, NULL, ?, 0)",
                [(start, end, kind, text, tid) for start, end, kind, text in self.rows],
            )


_report = _Report()


class _Cudart:
    def cudaProfilerStart(self) -> None:  # noqa: N802 - torch's name
        _event("start")
        _report.recording = True

    def cudaProfilerStop(self) -> None:  # noqa: N802 - torch's name
        _event("stop")
        _report.recording = False
        _report.write()


_capturing = [False]


class _CUDAGraph:
    def replay(self) -> None:
        _event("graph.replay")


class _GraphCapture:
    """torch.cuda.graph(g): the stream captures while inside (no kernel runs)."""

    def __init__(self, graph: _CUDAGraph, *args: object, **kwargs: object) -> None:
        self.graph = graph

    def __enter__(self) -> _CUDAGraph:
        _event("graph.capture")
        _capturing[0] = True
        return self.graph

    def __exit__(self, *exc: object) -> None:
        _capturing[0] = False


cuda: Any = SimpleNamespace(
    synchronize=lambda: None,
    CUDAGraph=_CUDAGraph,
    graph=_GraphCapture,
    is_current_stream_capturing=lambda: _capturing[0],
    cudart=_Cudart,
    is_initialized=lambda: os.environ.get("STANDIN_CUDA", "1") == "1",
    nvtx=SimpleNamespace(range_push=_report.push, range_pop=_report.pop, mark=_report.mark),
)
nn: Any = SimpleNamespace(Linear=_Module)
amp: Any = SimpleNamespace(GradScaler=_GradScaler)
_C: Any = SimpleNamespace(_current_graph_task_id=lambda: _graph_task[0])


def compile(function: Callable[..., Any], *args: object, **kwargs: object) -> Callable[..., Any]:  # noqa: A001
    return function
