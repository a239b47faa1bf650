"""bench/tree_memory.py on real processes: a worker seen first as a fork of its parent (before
its exec, it has the parent's command line) is still counted as a worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from bench.tree_memory import TreePeak

# The parent forks; the child waits with the parent's command line, then execs into a
# program whose command line names spawn_main, as multiprocessing's spawned workers do.
PARENT = textwrap.dedent(
    """
    import os, sys, time
    pid = os.fork()
    name = "spawn" + "_main"  # not in this parent's own command line
    if pid == 0:
        time.sleep(0.4)
        os.execv(sys.executable, [sys.executable, "-c",
                 f"import time  # {name}\\nb = bytearray(64 << 20)\\ntime.sleep(0.6)"])
    os.waitpid(pid, 0)
    """
)


def test_a_fork_that_becomes_a_worker_counts_as_a_worker() -> None:
    proc = subprocess.Popen([sys.executable, "-c", PARENT])
    with TreePeak(proc.pid, interval_s=0.02) as peak:
        proc.wait()
    kinds = peak.by_kind()
    assert sorted(kinds) == ["main", "worker"], kinds
    assert len(kinds["worker"]) == 1 and kinds["worker"][0] >= 64  # its 64 MB buffer counted
