"""Issue 24 on the local Slurm cluster: a generated job.sbatch records steps FIRST..LAST of an
unmodified script (zero-patch: the helper reaches every rank through PYTHONPATH), and of the
same script patched with the generated training-loop.patch. The script runs under the torch
stand-in (no CUDA here), which logs what each rank asked of torch; nsys 2023.4.4 wraps the
recorded ranks as it would on a GPU cluster."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.realparts import LocalCluster
from tests.stepruns import STANDIN, parse

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]

SOURCE = "tests/workloads/accumulate_continue.py"


@pytest.mark.parametrize(("method", "sweep"), [("hook", False), ("patch", False), ("hook", True)])
def test_generated_job_records_exactly_the_steps(
    local_cluster: LocalCluster, nsys_2023: Path, method: str, sweep: bool
) -> None:
    """A sweep point finds the tree's one helper two levels up, as a single setup one level."""
    name = f"e2e-steps-{method}{'-sweep' if sweep else ''}"
    root = local_cluster.shared_fs / "repos" / name  # the repository, as the cluster sees it
    script = root / SOURCE
    script.parent.mkdir(parents=True)
    shutil.copy(REPO / SOURCE, script)
    events = local_cluster.shared_fs / "jobs" / f"{name}-events"
    events.mkdir(parents=True)
    folder = local_cluster.compile(
        "workload=python",
        f"workload.python.interpreter={shutil.which('python3') or 'python3'}",
        f"workload.python.script={script}",
        f"workload.python.source={SOURCE}",
        "capture=steps",
        f"capture.step_method={method}",
        "capture.first_step=3",
        "capture.last_step=5",
        "capture.ranks=[1,9]",
        "capture.trace=[cuda,nvtx]",
        f"+cluster.env.PYTHONPATH={STANDIN}",
        f"+cluster.env.STANDIN_EVENTS={events}",
        f"job.name={name}",
        "job.time_limit_min=10,11" if sweep else "job.time_limit_min=10",
        sweep=sweep,
    )
    if method == "patch":
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run(["git", "apply", str(folder / "training-loop.patch")], cwd=root, check=True)
    else:
        # One copy at the top of the tree, above the folder: nsys-exec finds it there.
        top = folder.parent.parent if sweep else folder.parent
        assert (top / "nsysgen-site" / "sitecustomize.py").is_file()
        assert not (folder / "nsysgen-site").exists()
    code, _, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log
    runs = {int(p.suffix[1:]): parse(p.read_text()) for p in events.glob("events.*")}
    assert sorted(runs) == list(range(16)), log
    for rank, run in runs.items():
        if rank not in (1, 9):
            assert (run.starts, run.steps) == (0, {}), rank  # inert on ranks not recorded
            continue
        assert (run.starts, run.stops) == (1, 1), rank
        assert run.recorded == ["step 3", "step 4", "step 5"], rank
        assert not run.mismatched, (rank, run.mismatched)  # logged as the script logs them
        for step in (3, 4, 5):
            # Four micro-batches, then the one optimizer step, marked.
            inside = ["forward", "backward"] * 4 + ["optimizer.step", "mark"]
            assert run.inside(step) == inside, (rank, step)
