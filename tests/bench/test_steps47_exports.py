"""The committed exports of issue 47's GPU run (one H100, 2026-12-07, nsys 2025.3.1;
bench/gpu/results/steps38-2026-12-07.json; tests/data/gpu/steps47/: each setup's rank-0 export,
xz-compressed, and its PROOF_LOG) checked with today's code: bench/gpu/steps38/check.py finds
each `step N` range holding exactly the optimizer step(s) the framework logged as N, and the
shipped verifier reads each process's numbering mark as the helper wrote it."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.shipped.verify.contents import read_contents
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "gpu" / "steps47"
CHECK = REPO / "bench" / "gpu" / "steps38" / "check.py"
# setup -> (first, last, optimizer steps a training step, what numbered the steps)
SETUPS = {
    "hf-resume-new": (25, 29, 1, "counter=state.global_step + 1 (transformers Trainer)"),
    "hf-resume-same": (25, 29, 1, "counter=state.global_step + 1 (transformers Trainer)"),
    "two-phase": (25, 29, 1, "counter=the step number the program prints (after the"),
    "two-phase-source": (25, 29, 1, "counter=the step number the program prints (after the"),
    "lightning-gan": (10, 14, 2, "counter=fit_loop.epoch_loop._batches_that_stepped"),
    "ignite-loop": (10, 14, 1, "counter=the step number the program prints (after the"),
}


def export(setup: str, folder: Path) -> Path:
    target = folder / f"{setup}.sqlite"
    target.write_bytes(lzma.decompress((DATA / f"{setup}.sqlite.xz").read_bytes()))
    return target


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_each_range_holds_the_steps_the_framework_logged(setup: str, tmp_path: Path) -> None:
    first, last, per_step, numbered = SETUPS[setup]
    sqlite = export(setup, tmp_path)
    done = subprocess.run(
        [sys.executable, str(CHECK), str(sqlite), str(DATA / f"{setup}.proof.jsonl"),
         "--per-step", str(per_step), "--expect-steps", f"{first}..{last}"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True, result
    assert [row["step"] for row in result["ranges"]] == list(range(first, last + 1))
    for row in result["ranges"]:
        assert row["logged"] == [[row["step"]]] * per_step, row
    marks = [text for _, _, text in read_contents(sqlite).numbering]
    assert len(marks) == 1 and f"per_step={per_step} " in marks[0], marks
    assert numbered in marks[0], marks


def test_the_committed_run_claims_every_setup_ok() -> None:
    summary = json.loads((REPO / "bench/gpu/results/steps38-2026-12-07.json").read_text())
    assert summary["ok"] is True and len(summary["setups"]) == 11
    assert set(SETUPS) <= set(summary["setups"])
