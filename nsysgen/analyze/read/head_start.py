"""Work done in threads of this process while something else gets ready: the map's nsys exports
while a local Dask cluster starts.

A local cluster takes about 2 s to start (each worker is a new Python that imports Dask, and
waits on its nanny), with the cores mostly idle: measured on one H100 machine, 1.8 s for 8
workers as for 16. An nsys export is a process of its own, so threads here can run one per core
meanwhile (a thread only waits on its nsys); the workers then read the exports made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class HeadStart(Generic[T, R]):
    """`work` on `items`, in order, in `threads` threads, from now until `finish()`.

    An item whose work raises one of `skipped` is left undone (whoever does it later sees the
    error again, and reports it in its place); any other exception is raised by `finish()`.
    """

    def __init__(
        self,
        items: Sequence[T],
        work: Callable[[T], R],
        threads: int,
        skipped: tuple[type[Exception], ...] = (),
    ) -> None:
        self._items, self._next = list(items), 0
        self._work, self._skipped = work, skipped
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._done: dict[int, R] = {}
        count = min(threads, len(self._items))
        self._pool = ThreadPoolExecutor(count, "head-start") if count > 0 else None
        self._runs: list[Future[None]] = [
            self._pool.submit(self._run) for _ in range(count) if self._pool is not None
        ]

    def _take(self) -> tuple[int, T] | None:
        with self._lock:
            if self._stop.is_set() or self._next == len(self._items):
                return None
            self._next += 1
            return self._next - 1, self._items[self._next - 1]

    def _run(self) -> None:
        while (taken := self._take()) is not None:
            index, item = taken
            try:
                result = self._work(item)
            except self._skipped:
                continue
            with self._lock:
                self._done[index] = result

    def finish(self) -> dict[int, R]:
        """Take no new item, wait for those under way; the results so far, by item index."""
        self._stop.set()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            for run in self._runs:
                run.result()  # a bug in `work` is raised here, not lost in a thread
        with self._lock:
            return dict(self._done)
