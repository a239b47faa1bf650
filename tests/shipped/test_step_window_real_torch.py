"""The zero-patch step helper with real torch (where torch is installed; skipped elsewhere):
torch's own global optimizer hooks, a torch.compile'd optimizer step, GradScaler's skip on inf
and optimizer-in-backward. CUDA and NVTX calls are recorded (tests/realtorch/fake_cuda.py), so
this runs on a CPU machine, in CI too (the test extras install torch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.stepruns import Run, parse, write_site

pytestmark = pytest.mark.slow
FOLDER = REPO / "tests" / "realtorch"


def run(tmp_path: Path, script: str) -> Run:
    pytest.importorskip("torch")
    site = write_site(tmp_path / "nsysgen-site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_PROFILE_")}
    env.update(
        NSYSGEN_PROFILE_FIRST_STEP="2",
        NSYSGEN_PROFILE_LAST_STEP="4",
        NSYSGEN_PROFILE_RANKS="0",
        RANK="0",
        PYTHONPATH=f"{site}{os.pathsep}{FOLDER}",
    )
    done = subprocess.run(
        [sys.executable, str(FOLDER / script)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return parse(done.stdout, done.stderr)


def test_a_compiled_optimizer_step_still_ends_each_step(tmp_path: Path) -> None:
    result = run(tmp_path, "compiled_step.py")
    assert (result.starts, result.stops) == (1, 1)
    assert result.recorded == ["step 2", "step 3", "step 4"]
    assert not result.mismatched


def test_a_skipped_scaler_step_ends_its_step(tmp_path: Path) -> None:
    result = run(tmp_path, "scaler_skip.py")
    assert result.recorded == ["step 2", "step 3", "step 4"]
    assert result.steps["step 4"] == ["mark nsysgen optimizer step 4 SGD#0 skipped"]


def test_optimizer_in_backward_is_refused(tmp_path: Path) -> None:
    result = run(tmp_path, "in_backward.py")
    assert (result.starts, result.steps) == (0, {})
    assert "optimizer-in-backward" in result.stderr
