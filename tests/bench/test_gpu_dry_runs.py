"""CPU dry runs of the GPU proofs (bench/gpu/steps38, bench/gpu/steps24): prepare.sh, then
device.sh as the device runs it, on this machine, so that a change of the generated files' layout
breaks a test here and not the next GPU session.

What stands in (tests/bench/standin/): `bin/nsys` for the Nsight Compute bundle's nsys (it runs
the program, records how it was started, and writes a report whose export holds what the program
recorded), `bin/apt-get` for the Debian download of libdw1/libelf1 (no network: two small .deb
files that nsys-env.sh unpacks as it does the real ones), `cuda/sitecustomize.py` for the GPU
(real CPU torch of the test extras; CUDA profiler and NVTX calls recorded into the report's
export); bench/gpu/shim/srun and scontrol, as on the device. The training programs, nsysgen's
generated jobs and helper, the verifier, check.py, count.py and summarize.py are the real ones.

steps38's five programs run whole on CPU (transformers, Lightning, accelerate and torch.compile
are in the test extras), so the dry run also proves the proof itself: every range holds the
optimizer step(s) the framework logs as N. steps24's scripts need a GPU (nanoGPT asks for
"cuda", NCCL, Fabric's CUDA accelerator) and stop early: its dry run proves the plumbing only
(every job reached its program through nsys-exec, every report is where verify looks, every
phase ran and packed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # about 80 s (steps38's five trainings on CPU) and 40 s (steps24)

STANDIN = REPO / "tests" / "bench" / "standin"
# setup -> (program, first step, last step), as bench/gpu/steps38/prepare.sh compiles them
STEPS38 = {
    "hf-trainer": ("hf_trainer.py", 10, 14),
    "lightning-trainer": ("lightning_trainer.py", 10, 14),
    "accelerate-loop": ("accelerate_loop.py", 10, 14),
    "gan-two-optimizers": ("gan_two_optimizers.py", 10, 14),
    "compiled-graphs": ("compiled_graphs.py", 20, 24),
    "hf-resume-new": ("hf_resume.py", 25, 29),
    "hf-resume-same": ("hf_resume.py", 25, 29),
    "two-phase": ("two_phase.py", 25, 29),
    "two-phase-source": ("two_phase.py", 25, 29),
    "lightning-gan": ("lightning_gan.py", 10, 14),
    "ignite-loop": ("ignite_loop.py", 10, 14),
    "epoch-index": ("epochs.py", 14, 17),
}
TWO_A_STEP = {"gan-two-optimizers", "lightning-gan"}
STEPS24 = [f"{name}-{how}" for how in ("hook", "patch") for name in ("nanogpt", "ddp", "fabric")]
CORPUS = "tests/training_scripts/corpus"


@dataclass
class DryRun:
    device_dir: Path  # what prepare.sh laid out (device/<proof> on the CPU machine)
    root: Path  # the jobs' shared filesystem on the "device"
    out: Path  # $OUT
    log: str  # device.sh's output

    def profiles(self) -> list[dict[str, Any]]:
        """What the stand-in nsys was asked to profile, one record per `nsys profile`."""
        path = self.out.parent / "nsys.jsonl"
        lines = path.read_text().splitlines() if path.is_file() else []
        return [json.loads(line) for line in lines]

    def summary(self, proof: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / f"{proof}.json").read_text())
        return data

    def packed(self, proof: str) -> list[str]:
        tarball = self.out / f"{proof}.tar.gz"
        assert tarball.is_file(), f"{tarball} not packed\n{self.log[-3000:]}"
        assert tarball.stat().st_size < 15_000_000  # what comes back from the device
        with tarfile.open(tarball) as tar:
            return tar.getnames()


def _bundle(base: Path) -> Path:
    """A stand-in Nsight Compute bundle's host folder, laid out as nsys-env.sh and the generated
    nsys-exec expect it."""
    host = base / "nsight-compute" / "host"
    (host / "target-linux-x64").mkdir(parents=True)
    (host / "linux-desktop-glibc_2_11_3-x64").mkdir()
    shutil.copy2(STANDIN / "bin" / "nsys", host / "target-linux-x64" / "nsys")
    importer = host / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    importer.write_text("#!/bin/sh\necho 'QdstrmImporter (stand-in): nothing' >&2\nexit 1\n")
    importer.chmod(0o755)
    return host


def dry_run(proof: str, base: Path, **extra: str) -> DryRun:
    """prepare.sh PROOF into base/device/PROOF, then its device.sh from the repository root."""
    device_dir, root, out = base / "device" / proof, base / "gpu", base / "out"
    # The test's own Python (with nsysgen, torch and the frameworks) is the device's python3.
    path = [str(STANDIN / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NSYSGEN_", "SLURM_"))}
    env.update(
        PATH=os.pathsep.join(path),
        PYTHONPATH=str(STANDIN / "cuda"),
        OUT=str(out),
        NSYS_STANDIN_LOG=str(base / "nsys.jsonl"),
        NSYSGEN_DRY_RUN="1",
        **{f"{proof.upper()}_ROOT": str(root), f"{proof.upper()}_NSIGHT_ROOT": str(_bundle(base))},
        **extra,
    )
    prepare = subprocess.run(
        ["bash", f"bench/gpu/{proof}/prepare.sh", str(device_dir)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert prepare.returncode == 0, prepare.stdout + prepare.stderr
    device = subprocess.run(
        ["bash", str(device_dir / "device.sh"), str(device_dir)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = device.stdout + device.stderr
    assert device.returncode == 0, log[-5000:]
    return DryRun(device_dir, root, out, log)


def test_steps38_dry_run(tmp_path: Path) -> None:
    run = dry_run("steps38", tmp_path)
    layout = run.device_dir
    assert (layout / "generated" / "nsysgen-verify.py").is_file()  # one verifier, above the setups
    assert sorted(p.name for p in (layout / "debs").glob("*.deb")) == [
        "libdw1_0.188-2.1_amd64.deb",
        "libelf1_0.188-2.1_amd64.deb",
    ]
    assert f"root={run.root}" in (layout / "settings.sh").read_text()
    for phase in ("phase env: done", "phase jobs: done", "phase checks: done", "all done"):
        assert phase in run.log, run.log[-3000:]

    # Each job reached its program through job.sbatch, the stand-in srun, nsys-exec and nsys,
    # with nsysgen's helper first on PYTHONPATH and the proof's log where the checks read it.
    profiles = {Path(p["cwd"]).parents[2].name: p for p in run.profiles()}
    assert sorted(profiles) == sorted(STEPS38)
    for setup, (program, first, _) in STEPS38.items():
        folder = run.root / "work" / setup / "bench" / "gpu" / "steps38"
        profile = profiles[setup]
        assert profile["argv"][-2:] == ["python3", str(folder / program)]
        assert profile["cwd"] == str(folder)
        site = run.root / "generated" / "nsysgen-site"  # the tree's one copy
        assert profile["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(site)
        assert profile["env"]["PROOF_LOG"] == str(run.root / "steps38" / setup / "proof.jsonl")
        assert profile["env"]["NSYSGEN_PROFILE_FIRST_STEP"] == str(first)
        output = next(a for a in profile["argv"] if a.startswith("--output="))
        reports = run.root / "nsight-reports" / setup
        assert output.startswith(f"--output={reports}/job%q{{SLURM_JOB_ID}}/"), output

    summary = run.summary("steps38")
    assert sorted(summary["setups"]) == sorted(STEPS38)
    assert {"torch", "transformers", "lightning", "accelerate"} <= set(summary["versions"])
    for setup, (_, first, last) in STEPS38.items():
        result = summary["setups"][setup]
        assert result["job_status"] == 0, result["errors"]
        assert result["verify_exit"] == 0, result["verify_reports"]
        assert result["steps"] == list(range(first, last + 1)), result
        # The framework's own numbers: each range holds its optimizer step(s), logged as N.
        for row in result["ranges"]:
            per_step = 2 if setup in TWO_A_STEP else 1
            assert len(row["keys"]) == per_step, row
            assert row["logged"] == [[row["step"]]] * per_step, row
        assert result["ok"] is True, result
    # The compile asked for step_expr first (exit 2, why and a candidate), then took the answer.
    asked = summary["setups"]["epoch-index"]["nsysgen_asked"]
    assert "shows each step as `i` (line 32), which restarts every epoch;" in asked, asked
    assert "(candidates: `epoch * len(loader) + i`)" in asked, asked
    assert summary["ok"] is True

    members = run.packed("steps38")
    assert "steps38/steps38.json" in members and "steps38/env.txt" in members
    for setup in STEPS38:
        for name in ("job.json", "verify.json", "proof.jsonl", "logs/task0.log"):
            assert f"steps38/{setup}/{name}" in members, (setup, name)
        assert any(m.startswith(f"steps38/{setup}/check-") for m in members), setup


def test_steps24_dry_run(tmp_path: Path) -> None:
    # One cost run of each kind (RUNS=1): on CPU they stop as early as the jobs do.
    run = dry_run("steps24", tmp_path, RUNS="1")
    generated = run.device_dir / "generated"
    assert (generated / "nsysgen-verify.py").is_file()
    assert not list(generated.glob("*/nsysgen-verify.py"))
    for name in ("nanogpt", "ddp", "fabric"):
        # The tree's one step helper, beside the patched script (the patch adds none).
        assert (run.device_dir / "work" / f"{name}-patch" / CORPUS / "nsysgen_window.py").is_file()
    assert run.log.count("packed:") == 3, run.log[-3000:]
    assert "all done" in run.log

    profiles = run.profiles()
    assert len(profiles) == len(STEPS24)  # one nsys per job (the DDP node's torchrun too)
    for setup in STEPS24:
        mine = [p for p in profiles if f"/nsight-reports/{setup}/job" in " ".join(p["argv"])]
        assert len(mine) == 1, (setup, profiles)
        assert any(f"/work/{setup}/" in arg for arg in mine[0]["argv"]), mine[0]["argv"]
        if setup.endswith("-hook"):
            site = str(run.root / "generated" / "nsysgen-site")
            assert mine[0]["env"]["PYTHONPATH"].split(os.pathsep)[0] == site

    summary = run.summary("steps24")
    assert sorted(summary["setups"]) == sorted(STEPS24)
    for setup, result in summary["setups"].items():
        # The scripts need a GPU and stop early here, but each report is where verify looks:
        # in the run's own folder job<ID>/, named for that job, and read (not missing).
        reports = result["verify_reports"]
        assert len(reports) == 1, (setup, result)
        assert reports[0]["status"] != "missing", (setup, reports)
        assert f"{setup}_job24" in reports[0]["report"], reports
        assert result["verify_exit"] in ("0", "1"), result
    assert set(summary["cost"]["nanogpt_runs"]) == {"nanogpt-none-1.log", "nanogpt-helper-1.log"}

    members = run.packed("steps24")
    assert "steps24/steps24.json" in members
    for setup in STEPS24:
        assert f"steps24/{setup}/verify.json" in members, setup
