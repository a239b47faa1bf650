"""Profile the job you already have, on the local Slurm cluster with real nsys 2023.4.4.

Each job script of tests/user_jobs/ (written as a team writes its own) is changed only as
`nsysgen ... target.job_script=yours` prints: the `source .../nsysgen-env.sh` line before its
srun line, `"$NSYSGEN_EXEC"` before the program in that line. It runs, and its reports, their
names and `nsysgen verify`'s result are those of the same setup compiled whole (job.sbatch).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nsysgen.cli import main
from tests.conftest import REPO
from tests.realparts import LocalCluster
from tests.stepruns import STANDIN, parse

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]

USER_JOBS = REPO / "tests" / "user_jobs"
TRAIN = REPO / "tests" / "workloads" / "nvtx_steps.py"
STEPS_SCRIPT = REPO / "tests" / "workloads" / "accumulate_continue.py"
# The jobs' `python3` is this interpreter (the test environment's packages, e.g. nvtx).
PATH = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"


@dataclass(frozen=True)
class Case:
    script: str  # in tests/user_jobs/
    argv: list[str]  # the program as the script's srun starts it (after the env below)
    overrides: list[str]
    env: dict[str, str]  # what the team's submit environment holds


def _cases(shared: Path) -> dict[str, Case]:
    return {
        "per_gpu": Case(
            "per_gpu.sbatch",
            ["python3", str(TRAIN), "--idle", "--steps", "30", "--step-seconds", "0.1"]
            + ["--profile-steps", "10:14", "--marker-dir", "{markers}"],
            ["workload.launch=per_gpu", "capture=nvtx", "capture.nvtx_range=profile"]
            + ["capture.ranks=[0,3]", "capture.trace=[nvtx]"],
            {"TRAIN": str(TRAIN)},
        ),
        "per_node_launcher": Case(
            "per_node_launcher.sbatch",
            ["python3", str(USER_JOBS / "minirun.py"), "--nproc_per_node=2", str(STEPS_SCRIPT)],
            ["workload.launch=per_node", "capture=steps", "capture.first_step=3"]
            + ["capture.last_step=5", "capture.ranks=[1]", "capture.trace=[cuda,nvtx]"]
            + [f"+cluster.env.PYTHONPATH={STANDIN}", "+cluster.env.STANDIN_EVENTS={events}"],
            {"LAUNCHER": str(USER_JOBS / "minirun.py"), "TRAIN": str(STEPS_SCRIPT)},
        ),
        "shell_launcher": Case(
            "shell_launcher.sbatch",
            ["bash", str(USER_JOBS / "launch.sh"), "--idle", "--steps", "80"]
            + ["--step-seconds", "0.1", "--marker-dir", "{markers}"],
            ["workload.launch=per_gpu", "capture=window", "capture.delay=1"]
            + ["capture.duration=2", "capture.ranks=[0,3]", "capture.trace=[nvtx]"],
            {"LAUNCH_SH": str(USER_JOBS / "launch.sh"), "TRAIN": str(TRAIN)},
        ),
    }


def _compile(cluster: LocalCluster, case: Case, name: str, mode: str, run: Path) -> Path:
    fill = {"markers": str(run / "markers"), "events": str(run / "events")}
    argv = ",".join(f"'{a.format(**fill)}'" for a in case.argv)
    overrides = [o.format(**fill) for o in case.overrides]
    out = cluster.shared_fs / "jobs"
    code = main(
        [
            "cluster=local",
            f"cluster.shared_fs={cluster.shared_fs}",
            "cluster.gpus_per_node=2",
            "nsight=2023.4.4",
            "workload=command",
            f"workload.command.argv=[{argv}]",
            *overrides,
            f"target.job_script={mode}",
            f"job.name={name}",
            "job.time_limit_min=10",
            f"output_dir={out}",
        ]
    )
    assert code == 0
    return out / name


def _printed_change(folder: Path) -> list[str]:
    """The two lines nsysgen printed for the job script (compile output, as a user sees it)."""
    done = subprocess.run(
        [sys.executable, "-m", "nsysgen", *_manifest_overrides(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    start = lines.index("nsys-exec in its srun line (as this folder's README says):") + 1
    return [line.strip() for line in lines[start:] if not line.strip().startswith("#")]


def _manifest_overrides(folder: Path) -> list[str]:
    manifest = json.loads((folder / "nsysgen-manifest.json").read_text())
    return [*manifest["overrides"], f"output_dir={folder.parent}"]


def _apply(script: str, change: list[str]) -> str:
    """The user's script, changed as printed: the source line before the srun line, and
    "$NSYSGEN_EXEC" before the program in it (after srun's own options)."""
    source, srun = change
    assert srun.startswith("srun [your srun options] ")
    program_start = srun.split('"$NSYSGEN_EXEC" ', 1)[1].split()[0]
    out = []
    for line in script.splitlines():
        if line.startswith("srun "):
            out.append(source)
            words = line.split(" ")
            at = words.index(program_start)
            line = " ".join([*words[:at], '"$NSYSGEN_EXEC"', *words[at:]])
        out.append(line)
    return "\n".join(out) + "\n"


def _names(reports: Path, job_id: str, job_name: str) -> list[str]:
    run = reports / f"job{job_id}"
    return sorted(
        p.name.replace(f"_job{job_id}_", "_job<id>_").replace(job_name, "<job>")
        for p in run.glob("*.nsys-rep")
    )


def _verify(folder: Path, job_id: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(folder.parent / "nsysgen-verify.py"), str(folder), "--job-id", job_id],
        capture_output=True,
        text=True,
    )
    # The per-report status lines and the verdict, names and ids left out.
    keep = [
        line.split()[:4] for line in done.stdout.splitlines() if line.startswith(("rank", "node"))
    ]
    return [" ".join(words) for words in keep] + [done.stdout.splitlines()[-1].split(":")[1]]


@pytest.mark.parametrize("case_name", ["per_gpu", "per_node_launcher", "shell_launcher"])
def test_own_job_script_changed_as_printed_gives_the_same_profile(
    local_cluster: LocalCluster, nsys_2023: Path, case_name: str, tmp_path: Path
) -> None:
    case = _cases(local_cluster.shared_fs)[case_name]
    results = {}
    logs = {}

    def run_mode(mode: str) -> None:
        name = f"own-{case_name.replace('_', '-')}-{mode}"
        run = local_cluster.shared_fs / "runs" / name
        (run / "events").mkdir(parents=True, exist_ok=True)
        (run / "markers").mkdir(parents=True, exist_ok=True)
        for old in (run / "events").glob("events.*"):
            old.unlink()  # a rerun's events only
        folder = _compile(local_cluster, case, name, mode, run)
        env = {**case.env, "MARKERS": str(run / "markers"), "PATH": PATH}
        # The team's own environment (cluster.env is theirs: nsysgen-env.sh leaves it alone).
        env.update({"PYTHONPATH": str(STANDIN), "STANDIN_EVENTS": str(run / "events")})
        if mode == "nsysgen":
            assert (folder / "job.sbatch").is_file()
            code, job_id, log = local_cluster.sbatch_wait(folder, env=env)
        else:
            assert not (folder / "job.sbatch").exists()
            change = _printed_change(folder)
            original = (USER_JOBS / case.script).read_text()
            changed = _apply(original, change)
            diff = list(
                difflib.unified_diff(original.splitlines(), changed.splitlines(), lineterm="")
            )
            # Exactly the two printed changes: one line added, the srun line rewritten.
            assert sum(1 for d in diff if d.startswith("+") and not d.startswith("+++")) == 2, diff
            assert sum(1 for d in diff if d.startswith("-") and not d.startswith("---")) == 1, diff
            mine = run / "mine"
            mine.mkdir(exist_ok=True)
            script = mine / case.script
            script.write_text(changed)
            code, job_id, log = local_cluster.sbatch_wait(folder, script=script, env=env)
        assert code == 0, log
        report_dir = Path(json.loads((folder / "nsysgen-expect.json").read_text())["report_dir"])
        results[mode] = (_names(report_dir, job_id, name), _verify(folder, job_id), run)
        logs[mode] = log

    for mode in ("nsysgen", "yours"):
        run_mode(mode)
    if results["nsysgen"][0] != results["yours"][0]:
        # nsys 2023.4.4, several sessions on 2 cores, now and then loses a task's report in
        # ways its log does not always name (see NSYS_START_FAULTS): the run with fewer
        # reports runs once more; a real difference shows again.
        fewer = min(("nsysgen", "yours"), key=lambda m: len(results[m][0]))
        run_mode(fewer)
    whole, yours = results["nsysgen"], results["yours"]
    assert yours[0] == whole[0], (whole[0], yours[0], whole[1], yours[1], logs)
    # On CPU the torch stand-in opens no real CUDA window: no report for capture=steps there
    # (both alike); the window's steps are read from its log below.
    assert whole[0] or case_name == "per_node_launcher", whole
    assert yours[1] == whole[1], (whole[1], yours[1], logs)
    if case_name == "per_node_launcher":
        # The step window through the launcher's workers. One nsys per node records the whole
        # node, so rank 1's node (ranks 0 and 1) opens it on steps 3..5; node 1's never do.
        for mode in ("nsysgen", "yours"):
            events = results[mode][2] / "events"
            runs = {p.name: parse(p.read_text()) for p in events.glob("events.*")}
            assert sorted(runs) == ["events.0", "events.1", "events.2", "events.3"], mode
            for rank in ("0", "1"):
                assert runs[f"events.{rank}"].recorded == ["step 3", "step 4", "step 5"], mode
            assert runs["events.2"].starts == runs["events.3"].starts == 0, mode


def test_wrong_srun_shape_is_refused(local_cluster: LocalCluster, nsys_2023: Path) -> None:
    """An srun of another shape than the setup's (here 1 task per node for a per-GPU setup)
    is refused by nsys-exec, naming both shapes: no profile of other ranks than declared."""
    run = local_cluster.shared_fs / "runs" / "own-shape"
    case = _cases(local_cluster.shared_fs)["per_gpu"]
    folder = _compile(local_cluster, case, "own-shape", "yours", run)
    change = _printed_change(folder)
    original = (
        (USER_JOBS / case.script).read_text().replace("--ntasks-per-node=2", "--ntasks-per-node=1")
    )
    script = run / "mine" / "shape.sbatch"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(_apply(original, change))
    env = {"TRAIN": str(TRAIN), "MARKERS": str(run / "markers"), "PATH": PATH}
    code, _, log = local_cluster.sbatch_wait(folder, script=script, env=env)
    assert code != 0
    assert re.search(
        r"this srun runs 2 tasks on 2 nodes .*; setup own-shape was compiled for 4", log
    ), log
