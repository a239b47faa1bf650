"""The README's paths run as written: each block marked `<!-- readme-path: NAME -->` is run by
bash, line for line, with `nsysgen` the source tree's. A README edit that breaks a path (a
flag renamed, a folder that is not where the text says, a step left out) fails here.

One stand-in is shared by every path: `/fsx`, the cluster's shared filesystem in the README,
is a folder of the test's. Beyond it, each test says what it stands in for and why: the EKS
path runs against stand-ins for `kubectl` (pods that appear only after a few polls), `helm` and
the Nsight Operator CLI; the own-job path runs on the local Slurm cluster with real nsys, the
local cluster's overrides added to the README's compile.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analyze.test_analyze import GPU_SQLITE, NCCL_TESTS_LOG
from tests.compile.test_eks_before_apply import STANDIN_KUBECTL
from tests.conftest import REPO
from tests.realparts import LocalCluster

PATHS = ("own-job", "eks", "analyze", "sweep")
MARKER = re.compile(r"<!-- readme-path: ([\w-]+) -->\n```bash\n(.*?)\n```", re.S)
USER_JOBS = REPO / "tests" / "user_jobs"
NVTX_STEPS = REPO / "tests" / "workloads" / "nvtx_steps.py"


def readme_paths() -> dict[str, str]:
    return dict(MARKER.findall((REPO / "README.md").read_text(encoding="utf-8")))


def readme_path(name: str, fsx: Path) -> str:
    """The block, with the test's folder where the README says /fsx."""
    return readme_paths()[name].replace("/fsx", str(fsx))


def tools(folder: Path, **scripts: str) -> Path:
    """A folder for PATH: `nsysgen` (this source tree, this interpreter) and `scripts`."""
    folder.mkdir(parents=True, exist_ok=True)
    scripts["nsysgen"] = f'#!/bin/sh\nexec {sys.executable} -m nsysgen "$@"\n'
    for name, body in scripts.items():
        (folder / name).write_text(body)
        (folder / name).chmod(0o755)
    return folder


def run_block(text: str, cwd: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text],
        cwd=cwd,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            **env,
            "PATH": f"{bin_dir}:{env.get('PATH', os.environ['PATH'])}",
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_every_path_of_the_readme_is_marked_and_tested() -> None:
    assert sorted(readme_paths()) == sorted(PATHS)


# ---------------------------------------------------------------------------------------------
# Your own job: compile, your sbatch changed as printed, verify, analyze


def own_job_parts(fsx: Path) -> tuple[str, str]:
    """The block in two: up to the compile, and from the user's edit on (both in its folder)."""
    text = readme_path("own-job", fsx)
    before, edit, after = text.partition("\n# Change my-job.sbatch as printed")
    return before, text.splitlines()[0] + "\n" + edit.lstrip("\n") + after


def printed_change(stdout: str) -> tuple[str, str]:
    """The two lines the compile printed for the user's script: the source line and srun's."""
    lines = [line.strip() for line in stdout.splitlines()]
    start = lines.index("nsys-exec in its srun line (as this folder's README says):") + 1
    source, srun = lines[start : start + 2]
    assert source.startswith("source ") and srun.startswith("srun [your srun options] "), lines
    return source, srun


def test_own_job_compile_prints_the_lines_to_change(tmp_path: Path) -> None:
    fsx = tmp_path / "fsx"
    (fsx / "profiles").mkdir(parents=True)
    compile_part, _ = own_job_parts(fsx)
    done = run_block(compile_part, tmp_path, tools(tmp_path / "bin"))
    assert done.returncode == 0, done.stderr
    folder = fsx / "profiles" / "generated" / "command-p5-slurm"
    assert printed_change(done.stdout) == (
        f"source {folder}/nsysgen-env.sh",
        f'srun [your srun options] "$NSYSGEN_EXEC" torchrun --nproc_per_node=8 {fsx}/train.py',
    )
    assert (folder / "nsysgen-env.sh").is_file() and not (folder / "job.sbatch").exists()


# A team's job as it was before profiling: two nodes, torchrun per node.
MY_JOB = """\
#!/bin/bash
#SBATCH --job-name=train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:10:00
#SBATCH --output=%x_%j.out
set -euo pipefail
srun --label torchrun --nproc_per_node=2 {train}
"""


def change_as_printed(script: str, source: str, srun: str) -> str:
    """The user's edit: the source line before the srun line, "$NSYSGEN_EXEC" before the
    program in it (the word the printed srun line puts it before)."""
    program = srun.split('"$NSYSGEN_EXEC" ', 1)[1].split()[0]
    out = []
    for line in script.splitlines():
        if line.startswith("srun "):
            out.append(source)
            line = line.replace(f" {program} ", f' "$NSYSGEN_EXEC" {program} ', 1)
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.slurm
@pytest.mark.nsys
def test_own_job_path_on_the_local_cluster(
    tmp_path: Path, local_cluster: LocalCluster, nsys_2023: Path
) -> None:
    """The README's own-job block on the local cluster (2 nodes of 2 "GPUs", nsys 2023.4.4):
    its compile gets the local cluster's overrides added (the README's cluster=p5 has 8 GPUs a
    node), the step window a time window (a CPU has no cudaProfilerStart to open nsys's capture),
    torchrun is tests/user_jobs/minirun.py (torchrun's contract, no torch), train.py the CPU
    tests' NVTX program; everything else runs as the README writes it."""
    fsx = local_cluster.shared_fs
    (fsx / "profiles").mkdir(exist_ok=True)
    # The user's train.py: the CPU tests' program (an NVTX range a step, 0.1 s each).
    markers = tmp_path / "markers"
    markers.mkdir()
    steps_argv = ["--idle", "--steps", "60", "--step-seconds", "0.1", "--marker-dir", str(markers)]
    (fsx / "train.py").write_text(
        "import runpy, sys\n"
        f"sys.argv = [{str(NVTX_STEPS)!r}, *{steps_argv!r}]\n"
        f"runpy.run_path({str(NVTX_STEPS)!r}, run_name='__main__')\n"
    )
    local = (
        f" cluster=local cluster.shared_fs={fsx} cluster.gpus_per_node=2 nsight=2023.4.4"
        " job.name=command-p5-slurm job.time_limit_min=10"
    )
    compile_part, rest = own_job_parts(fsx)
    compile_part = compile_part.replace("capture.last_step=24", "capture.last_step=24" + local)
    compile_part = compile_part.replace("--nproc_per_node=8", "--nproc_per_node=2")
    # A CPU has no cudaProfilerStart for the step window to open nsys's capture with, nor CUDA
    # to trace: the local run records a time window of NVTX ranges instead.
    steps = "capture=steps capture.first_step=20 capture.last_step=24"
    assert steps in compile_part
    window = "capture=window capture.delay=2 capture.duration=2 capture.trace=[nvtx]"
    compile_part = compile_part.replace(steps, window)
    python = Path(sys.executable).parent
    bin_dir = tools(
        tmp_path / "bin", torchrun=f'#!/bin/sh\nexec python3 {USER_JOBS / "minirun.py"} "$@"\n'
    )
    env = {
        **local_cluster.env,
        "PATH": f"{python}:{os.environ['PATH']}",
        "NSYS": str(nsys_2023),
    }
    compiled = run_block(compile_part, tmp_path, bin_dir, **env)
    assert compiled.returncode == 0, compiled.stderr
    job = fsx / "profiles" / "my-job.sbatch"
    job.write_text(
        change_as_printed(MY_JOB.format(train=fsx / "train.py"), *printed_change(compiled.stdout))
    )
    done = run_block(rest, tmp_path, bin_dir, **env)
    logs = "\n".join(p.read_text() for p in (fsx / "profiles").glob("train_*.out"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + logs[-3000:]
    folder = fsx / "profiles" / "generated" / "command-p5-slurm"
    report_dir = Path(json.loads((folder / "nsysgen-expect.json").read_text())["report_dir"])
    assert report_dir == fsx / "nsight-reports" / "command-p5-slurm"
    [analysis] = (fsx / "profiles").glob("analysis-*")
    assert (analysis / "summary.json").is_file(), sorted(p.name for p in analysis.iterdir())


# ---------------------------------------------------------------------------------------------
# EKS: what must be on the cluster, compile, install, apply, window, fetch


@pytest.mark.slow
def test_eks_path_against_stand_ins(tmp_path: Path) -> None:
    bin_dir = tools(
        tmp_path / "bin",
        kubectl=STANDIN_KUBECTL,
        helm='#!/bin/bash\nprintf "%s\\n" "helm $*" >>"$CALLS"\n',
        # nsight_operator.py and nsysgen-verify.py run through python3: what they do is
        # tested elsewhere; here, that they are called, in order.
        python3='#!/bin/bash\nprintf "%s\\n" "python3 $*" >>"$CALLS"\n',
        **{"nsight_operator.py": "#!/bin/bash\n"},
        # The polls count, not the clock.
        sleep='#!/bin/bash\nprintf "%s\\n" "sleep $*" >>"$CALLS"\n',
    )
    calls = tmp_path / "calls"
    done = run_block(
        readme_path("eks", tmp_path / "fsx"),
        tmp_path,
        bin_dir,
        CALLS=str(calls),
        COUNTER=str(tmp_path / "counter"),
        LATE="3",
        POD_COUNT="2",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kubectl get pvc fsx-pvc" in done.stdout  # plan: what must be on the cluster
    said = calls.read_text().splitlines()
    assert said[0].startswith("helm install --wait --namespace nsight-operator")
    # The pods appear after three polls: the window script waited, then for readiness.
    assert sum(c.startswith("kubectl get pods") for c in said) == 4, said
    order = [
        next(i for i, c in enumerate(said) if step in c)
        for step in (
            "kubectl apply -f trainjob.yaml",
            "nsight_operator.py session-begin",
            "kubectl get pods",
            "kubectl wait pods",
            "nsight_operator.py profiler-start",
            "nsight_operator.py profiler-stop",
            "nsight_operator.py session-end",
            "nsight_operator.py download",
            "nsysgen-verify.py",
        )
    ]
    assert order == sorted(order), said


# ---------------------------------------------------------------------------------------------
# Analyze and sweeps


@pytest.mark.slow
def test_analyze_path(tmp_path: Path) -> None:
    fsx = tmp_path / "fsx"
    reports = fsx / "nsight-reports" / "nccl-allreduce-p4de" / "job123"
    reports.mkdir(parents=True)
    shutil.copy(GPU_SQLITE, reports / GPU_SQLITE.name)
    (tmp_path / "slurm-123.out").write_text(NCCL_TESTS_LOG)  # the job's log: nccl-tests' output
    done = run_block(readme_path("analyze", fsx), tmp_path, tools(tmp_path / "bin"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ncclAllReduce             128 MiB     20 calls" in done.stdout
    assert (reports / "analysis" / "nccl_by_size.csv").is_file()


@pytest.mark.slow
def test_sweep_path(tmp_path: Path) -> None:
    done = run_block(readme_path("sweep", tmp_path / "fsx"), tmp_path, tools(tmp_path / "bin"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("generated/fsdp-p5-slurm: sweep of 6 points (6 new); files: ")
    assert lines[-1].startswith("nsysgen check: ")
    assert "current in generated" in lines[-1]
