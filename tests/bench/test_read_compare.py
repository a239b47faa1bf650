"""bench/bench_read_compare.py stays runnable: today's reader against a checkout (here the same
one), each read in a process of its own, a ratio and every time in the JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EXPORT = REPO / "tests" / "data" / "gpu" / "nccl-allreduce.sqlite"


def test_the_reader_compared_with_a_checkout(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "bench/bench_read_compare.py", "--baseline-code", str(REPO),
         "--repeat", "1", "--json", str(out), str(EXPORT)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["exports"] == [str(EXPORT)] and len(result["today_s"]) == 1
    assert result["baseline_best_s"] > 0 and result["today_best_s"] > 0
    # The ratio of the unrounded times: the rounded ones give it to a few parts in a hundred.
    ratio = result["today_best_s"] / result["baseline_best_s"]
    assert result["ratio"] == pytest.approx(ratio, rel=0.05)
