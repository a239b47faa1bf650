"""Peak memory of a process and every process under it (a Dask cluster's workers, nsys's own
children), sampled while it runs: psutil finds the tree, and each process's peak is its own
high-water mark (VmHWM in /proc/PID/status: the kernel's record, so a spike between two samples
still counts), read at every sample until it ends.

    with TreePeak(proc.pid) as peak:
        proc.wait()
    peak.by_kind()  # {"main": [MB], "worker": [MB, MB], "other": [...]}
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import psutil  # type: ignore[import-untyped]

# A Dask worker of a local cluster: a process that multiprocessing spawned.
_WORKER = "spawn_main"


def high_water_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@dataclass
class TreePeak:
    pid: int
    interval_s: float = 0.05
    peaks: dict[int, float] = field(default_factory=dict)  # pid -> peak RSS, MB
    kinds: dict[int, str] = field(default_factory=dict)  # pid -> main | worker | other
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        for proc in tree:
            peak = high_water_mb(proc.pid)
            if peak is None:
                continue
            kind = self._kind(proc)
            if kind is None:
                continue
            if self.kinds.get(proc.pid) != kind:
                # A spawned worker is first a fork of its parent, with the parent's command
                # line, until its exec: it is classified again at each sample until it is a
                # worker, and its peak counts from then (the fork's is the parent's).
                self.kinds[proc.pid] = kind
                self.peaks.pop(proc.pid, None)
            self.peaks[proc.pid] = max(peak, self.peaks.get(proc.pid, 0.0))

    def _kind(self, proc: psutil.Process) -> str | None:
        known = self.kinds.get(proc.pid)
        if known in ("main", "worker"):
            return known
        if proc.pid == self.pid:
            return "main"
        try:
            line = " ".join(proc.cmdline())
        except psutil.Error:
            return None
        return "worker" if _WORKER in line else "other"

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def __enter__(self) -> TreePeak:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def by_kind(self) -> dict[str, list[float]]:
        """Peak RSS (MB, one decimal) of each process of each kind, largest first."""
        found: dict[str, list[float]] = {}
        for pid, peak in self.peaks.items():
            found.setdefault(self.kinds[pid], []).append(round(peak, 1))
        return {kind: sorted(values, reverse=True) for kind, values in sorted(found.items())}
