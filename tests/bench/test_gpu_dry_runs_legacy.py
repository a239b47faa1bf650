"""CPU dry runs of the GPU entry points older than steps38 (bench/gpu/x2.sh, device.sh with
prepare.sh and prove.py, verify.sh, accum.sh, pause31.sh, bench26.sh, export_rate.sh,
export_path.sh): each run as the device runs it, so that a change of nsysgen's generated files,
its report layout or its analysis breaks a test here and not the next GPU session.

What stands in (tests/bench/standin/, as for tests/bench/test_gpu_dry_runs.py): `bin/nsys` for
nsys 2025.3.1 (the Nsight Compute bundle's, laid out as the scripts expect it), `bin/apt-get`
for the download of libdw1/libelf1, `bin/nvidia-smi`, and `cuda/sitecustomize.py` with
STANDIN_GPUS=N for the GPUs: CPU torch, whose "cuda" device is the CPU, NCCL gloo, N GPUs
counted. bench/gpu/shim/srun and scontrol, as on the device. The programs (tests/workloads,
bench/gpu), nsysgen's generated jobs, patches and verifier, and nsysgen's analysis are the real
ones, at the sizes the scripts' own knobs shrink them to.

What cannot run here, and so is not asserted: GPU timings, kernels and NCCL kernels (the
stand-in records one kernel per optimizer step), nsys stats and recipes (the stand-in refuses
them, and the scripts record that), GPU metrics.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.bench.test_gpu_dry_runs import STANDIN, _bundle
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # torch on CPU: x2 and device.sh ~1 min each, the others < 10 s

X2_JOBS = ("clean", "slow", "hiccup")
DDP_SHAPES = ("neither", "rank0", "both")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Device:
    """The stand-in GPU machine: its environment, shared filesystem, $OUT and nsys log."""

    base: Path
    env: dict[str, str]

    @property
    def out(self) -> Path:
        return self.base / "out"

    @property
    def root(self) -> Path:
        return self.base / "gpu"

    def run(self, *argv: str | Path, timeout: float = 600, code: int = 0) -> str:
        proc = subprocess.run(
            [str(a) for a in argv],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        log = proc.stdout + proc.stderr
        assert proc.returncode == code, log[-6000:]
        return log

    def json(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / name).read_text())
        return data

    def profiles(self) -> list[dict[str, Any]]:
        """What the stand-in nsys was asked to profile, one record per `nsys profile`."""
        path = self.base / "nsys.jsonl"
        lines = path.read_text().splitlines() if path.is_file() else []
        return [json.loads(line) for line in lines]

    def debs(self) -> Path:
        """libdw1 and libelf1 as `apt-get download` fetches them (the stand-in's)."""
        folder = self.base / "debs"
        folder.mkdir(exist_ok=True)
        subprocess.run(
            ["apt-get", "download", "libdw1", "libelf1"], cwd=folder, env=self.env, check=True
        )
        return folder


def device(base: Path, gpus: int, **extra: str) -> Device:
    host = _bundle(base)
    path = [str(STANDIN / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NSYSGEN_", "SLURM_"))}
    env.update(
        PATH=os.pathsep.join(path),
        PYTHONPATH=str(STANDIN / "cuda"),
        STANDIN_GPUS=str(gpus),
        NSYS_HOST=str(host),
        GPU_ROOT=str(base / "gpu"),
        OUT=str(base / "out"),
        NSYS_STANDIN_LOG=str(base / "nsys.jsonl"),
        OMP_NUM_THREADS="1",  # two ranks on a 2-core machine
        MASTER_PORT=str(free_port()),
        PYTHONUNBUFFERED="1",
        **extra,
    )
    (base / "out").mkdir(parents=True)
    return Device(base, env)


def members(tarball: Path) -> list[str]:
    with tarfile.open(tarball) as tar:
        return tar.getnames()


def steps_of(export: Path) -> list[int]:
    with sqlite3.connect(export) as db:
        rows = db.execute("SELECT text FROM NVTX_EVENTS WHERE text LIKE 'step %'").fetchall()
    return sorted(int(text.split()[1]) for (text,) in rows)


def test_x2_dry_run(tmp_path: Path) -> None:
    """bench/gpu/x2.sh prepare, then run: issue 17's three jobs on 2 ranks (x2.py: jobs, export,
    trim, the carried nsysgen's straggler finder, packing) and issue 20's DDP rows
    (ablate_launch.py --nccl, one round)."""
    gpu = device(tmp_path, 2, X2_ROOT=str(tmp_path / "gpu"), DDP_ROUNDS="1",
                 X2_JOB_TIMEOUT_S="300")  # fmt: skip
    folder = tmp_path / "x2"
    gpu.run("bash", "bench/gpu/x2.sh", "prepare", folder, timeout=120)
    script = (folder / "work" / "tests" / "workloads" / "gpu_train.py").read_text()
    assert "_nsysgen_window.open(step)" in script  # the patch, on the whole script (its
    assert "with torch.cuda.graph(graph):" in script  # --graph mode is one mode of it)
    for job in X2_JOBS:
        assert (folder / "generated" / f"x2-{job}" / "nsys-exec").is_file()
    log = gpu.run("bash", folder / "x2.sh", "run", folder)
    assert "x2: issue 17 exit 0, issue 20 exit 0" in log, log[-3000:]

    names = {p.name for p in gpu.out.iterdir()}
    assert names == {"x2.log", "x2.json", "x2-exports.tar.gz", "x2-stats.tar.gz",
                     "x2-reports.tar", "ablation-launch-nccl.json"}  # fmt: skip
    summary = gpu.json("x2.json")
    assert summary["window"] == {"steps": 20, "first": 8, "last": 15}
    assert len(summary["gpus"]) == 2 and "stand-in" in summary["nsys"]
    assert sorted(summary["jobs"]) == sorted(X2_JOBS)
    reports: list[str] = []
    for job, entry in summary["jobs"].items():
        assert entry["run"]["exit"] == 0, entry["run"]
        assert sorted(entry["timing"]) == ["0", "1"]  # each rank's steps, over "NCCL"
        for timing in entry["timing"].values():
            assert timing["backend"] == "nccl" and len(timing["step_ms"]) == 20
        ranks = [r["report"] for r in entry["reports"]]
        assert ranks == [f"x2-{job}_job{entry['run']['job_id']}_rank{rank}_node0_gpunode1.nsys-rep"
                         for rank in (0, 1)]  # fmt: skip
        for report in entry["reports"]:
            # The window, exactly: steps 8..15 on each rank's report, and the trimmed export
            # reduces as the full one does.
            assert list(report["steps_per_pid"].values()) == [list(range(8, 16))], report
            assert report["rows"]["NVTX_EVENTS"] > 0 and report["trim_exact"] is True
        analysis = entry["device_analysis"]
        assert "error" not in analysis, analysis
        assert sorted(analysis) == ["collectives_per_step", "step_ms", "stragglers", "wait_ms"]
        assert sorted(analysis["step_ms"]) == ["0", "1"]
        assert isinstance(entry["device_check"], (str, list))
        reports += [r.removesuffix(".nsys-rep") for r in ranks]
    # The stand-in refuses nsys stats and recipes: each was asked, and its failure recorded.
    assert sorted(summary["nsys_stats"]) == sorted(reports)
    assert summary["recipes"]["job"] == "slow"
    assert sorted(summary["recipes"]) == ["cuda_gpu_kern_sum", "job", "nccl_sum",
                                          "nvtx_gpu_proj_sum"]  # fmt: skip
    exports = members(gpu.out / "x2-exports.tar.gz")
    assert sorted(exports) == sorted(["exports", *(f"exports/{r}.sqlite" for r in reports)])
    assert sorted(members(gpu.out / "x2-reports.tar")) == sorted(f"{r}.nsys-rep" for r in reports)
    with tarfile.open(gpu.out / "x2-exports.tar.gz") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    assert steps_of(tmp_path / "back" / "exports" / f"{reports[0]}.sqlite") == list(range(8, 16))

    ablation = gpu.json("ablation-launch-nccl.json")
    assert ablation["mode"] == "nccl" and ablation["errors"] == [] and ablation["ddp_gpus"] == 2
    assert "--capture-range=cudaProfilerApi" in ablation["current_flags"]
    assert [r["shape"] for r in ablation["ddp_runs"]] == list(DDP_SHAPES)
    for row in ablation["ddp_runs"]:
        assert row["backend"] == "nccl", row
        assert len(row["rank0"]["step_ms"]) == len(row["rank1"]["step_ms"]) == 50
    assert sorted(ablation["ddp_summary"]) == sorted(DDP_SHAPES)
    # Under nsys: each job's two ranks through its nsys-exec; the DDP rows' rank 0, then both.
    profiles = gpu.profiles()
    assert len(profiles) == 2 * len(X2_JOBS) + 1 + 2
    for job in X2_JOBS:
        mine = [p for p in profiles if f"/nsight-reports/x2-{job}/job" in " ".join(p["argv"])]
        assert len(mine) == 2, (job, profiles)


def test_verify_dry_run(tmp_path: Path) -> None:
    """bench/gpu/verify.sh prepare DIR SRUN, then run: the folder's verifier on the job's report
    (complete) and on a copy of the run without it (missing)."""
    gpu = device(tmp_path, 1, WIDTH="64")
    folder = tmp_path / "verify"
    gpu.run("bash", "bench/gpu/verify.sh", "prepare", folder, "bench/gpu/shim/srun", timeout=120)
    assert sorted(p.name for p in (folder / "shim").iterdir()) == ["scontrol", "srun"]
    log = gpu.run("bash", folder / "verify.sh", "run", folder, timeout=300)
    assert gpu.json("exits.json") == {"job_status": 0, "verify_exit": 0, "verify_missing_exit": 1}
    verified = gpu.json("verify.json")
    assert verified["complete"] is True, verified
    assert "MISSING" in (gpu.out / "verify-missing.txt").read_text(), log[-3000:]
    assert "verify_job116_rank0_node0_gpunode1.nsys-rep" in {p.name for p in gpu.out.iterdir()}


def test_accum_dry_run(tmp_path: Path) -> None:
    """bench/gpu/accum.sh prepare, then run: the gradient-accumulation loop's window and what
    each step range holds (accum_check.py)."""
    gpu = device(tmp_path, 1, WIDTH="64")
    folder = tmp_path / "accum"
    gpu.run("bash", "bench/gpu/accum.sh", "prepare", folder, timeout=120)
    gpu.run("bash", folder / "accum.sh", "run", folder, timeout=300)
    result = gpu.json("accum.json")
    assert result["job_exit"] == 0
    assert result["reports"] == ["accum_job115_rank0_node0_gpunode1.nsys-rep"]
    assert any("_nsysgen_window.open(step)" in line for line in result["patch_lines"])
    assert result["steps"] == [f"step {n}" for n in range(20, 25)]
    assert result["kernels"] == 5  # the stand-in's: one per optimizer step
    for step in result["steps"]:
        inside = result["per_step"][step]
        assert inside["micro_batches"] == [f"micro {k}" for k in range(4)], inside
        assert inside["optimizer_steps"] == 1, inside
    assert result["outside_steps"] == 0


def test_device_prove_dry_run(tmp_path: Path) -> None:
    """bench/gpu/prepare.sh DIR, then device.sh (prove.py): issue 6 (launch shape, one round),
    issue 8 (all-reduces over two ranks) and issue 9 (FSDP in both launch shapes), then the
    GPU claims (check_results.py), which a CPU cannot meet: prove.py exits 1 and says why."""
    gpu = device(tmp_path, 2, NCCL_ITERS="2", FSDP_WIDTH="64")
    folder = tmp_path / "device"
    gpu.run("bash", "bench/gpu/prepare.sh", folder, timeout=180)
    gpu.env.update(NSYSGEN_DEVICE_DIR=str(folder), ROUNDS="1", SHAPES="launch")
    log = gpu.run("bash", folder / "device.sh", timeout=600, code=1)
    summary = gpu.json("summary.json")
    assert "issue6_compute" not in summary
    window = summary["issue6_launch"]
    assert window["window_report"] == "steps-launch_job101_rank0_node0_gpunode1.nsys-rep"
    assert list(window["steps_in_window_report"].values()) == [[40, 41, 42, 43, 44]]
    assert window["kernels_in_window_report"]["count"] == 5  # the stand-in's, one a step
    runs = window["median_step_ms_outside_window"]
    assert {kind: len(times) for kind, times in runs.items()} == {
        "unprofiled": 1, "whole": 1, "window": 1,
    }  # fmt: skip
    nccl = summary["issue8_nccl"]
    assert nccl["run"]["exit"] == 0, nccl["run"]
    assert nccl["reports"] == ["nccl-allreduce_job103_rank0_node0_gpunode1.nsys-rep"]
    assert nccl["sizes"]["world"] == 2 and set(nccl["sizes"]["calls_per_size"].values()) == {3}
    assert (gpu.out / "nccl-allreduce.sqlite").is_file()
    assert summary["gpu_metrics_probe"]["ok"] is True  # the stand-in grants counters
    window9 = list(range(10, 15))
    for base, names in (
        ("fsdp-node-all", ["fsdp-node-all_job104_node0_gpunode1_allgpus"]),
        ("fsdp-node-rank0", ["fsdp-node-rank0_job105_node0_gpunode1_allgpus"]),
        ("fsdp-gpu-all", [f"fsdp-gpu-all_job106_rank{r}_node0_gpunode1" for r in (0, 1)]),
    ):
        entry = summary[f"issue9_{base}"]
        assert entry["setup"] == base and entry["run"]["exit"] == 0, entry["run"]
        assert [r["report"] for r in entry["reports"]] == [f"{n}.nsys-rep" for n in names]
        # One torchrun per node: both workers in the node's report (nsysgen records every
        # worker of a recorded node: NSYSGEN_PROFILE_RANKS=all); one nsys per task: its rank's.
        recorded = 1 if base == "fsdp-gpu-all" else 2
        for report in entry["reports"]:
            assert list(report["steps_per_pid"].values()) == [window9] * recorded, report
    for name in ("steps-launch", "whole-launch"):
        assert (gpu.out / f"{name}.nsys-rep").is_file()
    # What only a GPU gives (NCCL kernels, GPU metrics) is checked, and fails here.
    assert "issue 8: 0 NCCL kernels for 15 calls" in log, log[-3000:]
    assert "all GPU claims hold" not in log


def test_pause31_dry_run(tmp_path: Path) -> None:
    """bench/gpu/pause31.sh DEBS: both loops (the compute one shrunk), two variants, one run."""
    gpu = device(tmp_path, 1, MODES="launch compute", WINDOWS="0.2", RUNS="1",
                 VARIANTS="base osrt", PAUSE_MATMUL_N="64")  # fmt: skip
    log = gpu.run("bash", "bench/gpu/pause31.sh", gpu.debs(), timeout=300)
    assert "nsys exited" not in log and "no record" not in log, log[-3000:]
    records = [json.loads(line) for line in (gpu.out / "pause31.jsonl").read_text().splitlines()]
    assert [(r["variant"], r["mode"]) for r in records] == [
        ("base", "launch"), ("base", "compute"), ("osrt", "launch"), ("osrt", "compute"),
    ]  # fmt: skip
    for record in records:
        assert record["window_s"] == 0.2 and record["run"] == 1
        assert record["report_bytes"] > 0 and record["nsys_wall_s"] > 0
        edges = [s["edge"] for s in record["steps"] if s["edge"]]
        assert edges == ["open", "close"], edges
    flags = [p["argv"] for p in gpu.profiles()]
    assert all("--capture-range=cudaProfilerApi" in argv for argv in flags)
    assert sum("--trace=cuda,nvtx,osrt" in argv for argv in flags) == 2


def test_export_rate_dry_run(tmp_path: Path) -> None:
    """bench/gpu/export_rate.sh as the device runs it (beside nsys-env.sh and debs/): two short
    whole-run reports, each exported and reduced by nsysgen's map task."""
    gpu = device(tmp_path, 1, RUN_SECONDS="1 2")
    folder = tmp_path / "exp"
    folder.mkdir()
    for name in ("export_rate.sh", "nsys-env.sh"):
        shutil.copy(REPO / "bench" / "gpu" / name, folder)
    gpu.debs().rename(folder / "debs")
    gpu.run("bash", folder / "export_rate.sh", timeout=300)
    rows: list[dict[str, Any]] = json.loads((gpu.out / "export-rate.json").read_text())
    assert [r["seconds"] for r in rows] == [1, 2]
    for row in rows:
        assert sorted(row) == ["export_s", "kernels", "reduce_s", "report_bytes", "seconds",
                               "sqlite_bytes"]  # fmt: skip
        assert row["report_bytes"] > 0 and row["sqlite_bytes"] > 0 and row["kernels"] == 0


def test_bench26_dry_run(tmp_path: Path) -> None:
    """bench/gpu/bench26.sh DEBS: two stepped reports, the export floor, the other exporters,
    `nsysgen analyze` (in one process and on a local Dask cluster), its map's phases, and the
    recipes (refused by the stand-in, recorded)."""
    gpu = device(tmp_path, 1, REPORTS="2", SECONDS_EACH="1")
    gpu.run("bash", "bench/gpu/bench26.sh", gpu.debs(), timeout=400)
    result = gpu.json("bench26.json")
    assert result["reports"] == 2 and len(result["report_bytes"]) == 2
    assert result["switches"] == []  # the stand-in's export lists none
    assert result["tables_export_reads_equal"] is True
    assert result["nsysgen_ranks"] == 2 and result["nsysgen_steps"] > 0
    assert all(n > 0 for n in result["steps_per_report"])
    assert sorted(result["nsysgen_map_phases_s"]) == ["export", "read"]
    seconds = result["seconds"]
    for name in ("floor: nsys export sqlite", "nsys export sqlite --tables",
                 "nsys export arrowdir", "nsys export parquetdir", "nsysgen analyze --serial",
                 "nsysgen map (in turn, one export ahead)",
                 "floor in parallel: every export at once"):  # fmt: skip
        assert name in seconds, sorted(seconds)
    assert result["dask"] is (f"nsysgen analyze --workers {2}" in seconds)
    assert sorted(result["recipe_exit"]) == ["cuda_gpu_kern_sum", "nccl_sum", "nvtx_gpu_proj_sum"]
    assert sorted(result["ratios_to_floor"]) == sorted(seconds)


def test_export_path_dry_run(tmp_path: Path) -> None:
    """bench/gpu/export_path.sh DEBS: one rank's all-reduces recorded, exported three ways and
    read by nsysgen's reader."""
    gpu = device(tmp_path, 1)
    gpu.run("bash", "bench/gpu/export_path.sh", gpu.debs(), timeout=300)
    result = gpu.json("export-path.json")
    assert sorted(result["exports"]) == ["analyze", "plain", "verify"]
    for way in result["exports"].values():
        assert sorted(way) == ["calls", "calls_per_size", "ops", "ranges_with_payload", "sized"]


def test_device_experiments_dry_run(tmp_path: Path) -> None:
    """device.sh's later experiments on one prepare.sh: blobs (blobs.py), ablate-launch
    (ablate_launch.py: two configurations, one round, the window check) and ablate (ablate.py,
    launch-shaped, one round, and the session scope of one torchrun's two workers)."""
    gpu = device(tmp_path, 2, NCCL_ITERS="2", FSDP_WIDTH="64")
    folder = tmp_path / "device"
    gpu.run("bash", "bench/gpu/prepare.sh", folder, timeout=180)
    gpu.env.update(NSYSGEN_DEVICE_DIR=str(folder))
    gpu.run("bash", folder / "device.sh", "blobs", timeout=300)
    assert {"nccl-allreduce-blobs.sqlite", "nccl-allreduce.nsys-rep"} <= {
        p.name for p in gpu.out.iterdir()
    }

    gpu.env.update(ONLY="none,current", ROUNDS="1", PHASES="matrix,check")
    gpu.run("bash", folder / "device.sh", "ablate-launch", timeout=300)
    ablation = gpu.json("ablation-launch.json")
    assert [(r["key"], r["round"]) for r in ablation["runs"]] == [("none", 0), ("current", 0)]
    assert all("error" not in r and len(r["step_ms"]) == 50 for r in ablation["runs"])
    assert sorted(ablation["summary"]) == ["current", "none"]
    check = ablation["checks"]["current"]
    assert check["steps"] == list(range(30, 35)) and check["exact"] is True, check

    gpu.env.update(SHAPE="launch")
    gpu.run("bash", folder / "device.sh", "ablate", timeout=300)
    result = gpu.json("ablation.json")
    assert {k: len(v) for k, v in result["overhead_median_step_ms_launch"].items()} == {
        name: 1 for name in (
            "no nsys", "nsysgen flags (cuda,nvtx + range + --cuda-event-trace=false)",
            "without --cuda-event-trace=false", "--trace=cuda only",
            "nsysgen flags, window never opens", "--trace=nvtx, no range (nothing CUDA traced)",
        )
    }  # fmt: skip
    scope = result["session_scope"]
    assert sorted(scope) == ["ranks=0", "ranks=all"]
    assert len(scope["ranks=all"]["per_process"]) == 2  # both workers recorded their steps
    assert all(run["run"] == 0 for run in scope.values()), scope
