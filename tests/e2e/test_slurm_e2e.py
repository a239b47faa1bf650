"""Generated artifacts run for real: sbatch on a local Slurm (2 nodes x 8 fake GPUs), the
generated wrapper around a real nsys 2023.4.4, on a CPU program that marks steps with NVTX."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nsysgen.analyze.read.export import export_sqlite
from nsysgen.cli import main
from nsysgen.config.compose import Composer
from nsysgen.drivers import pipeline
from nsysgen.profile.estimate import estimate_report_size
from tests.conftest import EXPERIMENTS, REPO, RunCli
from tests.realparts import LocalCluster, python_workload

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]

NODE_OF = {rank: f"node{rank // 8 + 1}" for rank in range(16)}

# policy -> (capture.ranks override, the ranks that must record)
POLICIES = {
    "rank0": ("[0]", {0}),
    "one-per-node": ("one_per_node", {0, 8}),
    "list": ("[1,10]", {1, 10}),
    "all": ("all", set(range(16))),
}


def nvtx_ranges(nsys: Path, report: Path) -> list[tuple[str, int, int]]:
    """(name, start, end) of every NVTX push/pop and start/end range, from the SQLite export."""
    # The analyze command's own export, so the tests read what users' exports hold.
    sqlite_file = export_sqlite(report, str(nsys))
    with sqlite3.connect(sqlite_file) as db:
        return db.execute(
            "SELECT COALESCE(e.text, s.value), e.start, e.end FROM NVTX_EVENTS e "
            "LEFT JOIN StringIds s ON e.textId = s.id WHERE e.eventType IN (59, 60) "
            "ORDER BY e.start"
        ).fetchall()


def markers(folder: Path) -> dict[int, dict[str, object]]:
    return {
        int(p.stem.removeprefix("rank")): json.loads(p.read_text())
        for p in (folder / "markers").glob("rank*.json")
    }


def test_sbatch_test_only_accepts_every_experiment_and_local_shape(
    local_cluster: LocalCluster,
) -> None:
    out = local_cluster.shared_fs / "test-only"
    folders = []
    slurm_experiments = [e for e in EXPERIMENTS if not e.endswith("-eks")]
    for overrides in [[f"experiment={e}"] for e in slurm_experiments] + [
        # p4de and p5 shapes fit the local cluster: 2 nodes x 8 GPUs.
        [f"cluster={cluster}", f"workload={workload}"]
        for cluster in ("p4de", "p5")
        for workload in ("nccl", "nemo", "fsdp")
    ]:
        assert main([*overrides, f"output_dir={out}"]) == 0
    # The setups (the tree's shared nsysgen-site/ is none of them).
    folders = sorted(p for p in out.iterdir() if (p / "nsysgen-manifest.json").is_file())
    assert len(folders) == len(slurm_experiments) + 6
    folders.append(local_cluster.compile(*python_workload(local_cluster), "job.name=shape-local"))
    for folder in folders:
        proc = subprocess.run(
            ["sbatch", "--test-only", "job.sbatch"],
            cwd=folder,
            env=local_cluster.env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{folder.name}: {proc.stderr}"
        assert "to start at" in proc.stderr, proc.stderr


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_selected_ranks_record_exactly_the_nvtx_window(
    policy: str, local_cluster: LocalCluster, nsys_2023: Path
) -> None:
    ranks_override, recorded = POLICIES[policy]
    name = f"e2e-{policy}"
    folder = local_cluster.compile_program(
        name,
        ["--steps=8", "--profile-steps=3:5"],
        "capture=nvtx",
        "capture.nvtx_range=profile",
        "capture.trace=[nvtx,osrt]",
        f"capture.ranks={ranks_override}",
        "capture.recipes=[nvtx_sum,osrt_sum]",
    )
    code, job_id, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log

    # Every rank ran once, on its node; exactly the selected ones under nsys.
    seen = markers(folder)
    assert sorted(seen) == list(range(16)), log
    for rank, marker in seen.items():
        assert marker["node"] == NODE_OF[rank]
        assert marker["under_nsys"] is (rank in recorded), (rank, marker)
        assert marker["parent"] == ("nsys-launcher" if rank in recorded else "slurmstepd")

    report_dir = local_cluster.shared_fs / "nsight-reports" / name / f"job{job_id}"
    expected = {
        f"{name}_job{job_id}_rank{rank}_node{rank // 8}_{NODE_OF[rank]}.nsys-rep"
        for rank in recorded
    }
    assert {p.name for p in report_dir.glob("*.nsys-rep")} == expected
    assert not list(report_dir.glob("*.qdstrm")), "the importer did not run"

    for report in sorted(report_dir.glob("*.nsys-rep")):
        names = [row[0] for row in nvtx_ranges(nsys_2023, report)]
        # The capture opens with the "profile" range: steps 3..5 inside, nothing outside.
        assert names == ["profile", "step 3", "step 4", "step 5"], (report.name, names)


def test_window_capture_records_a_slice_and_the_job_keeps_running(
    local_cluster: LocalCluster, nsys_2023: Path
) -> None:
    name = "e2e-window"
    folder = local_cluster.compile_program(
        name,
        ["--steps=30", "--step-seconds=0.2"],
        "capture=window",
        "capture.delay=2",
        "capture.duration=2",
        "capture.ranks=[9]",
        "capture.trace=[nvtx,osrt]",
    )
    code, job_id, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log
    # --duration with --kill=none: the recorded rank finished all its steps too.
    assert {m["steps_done"] for m in markers(folder).values()} == {30}
    run = local_cluster.shared_fs / "nsight-reports" / name / f"job{job_id}"
    reports = list(run.glob("*.nsys-rep"))
    assert [r.name for r in reports] == [f"{name}_job{job_id}_rank9_node1_node2.nsys-rep"]
    steps = [int(row[0].split()[1]) for row in nvtx_ranges(nsys_2023, reports[0])]
    # A 2 s window of a 6 s run: a contiguous run of steps, none from the start or the end.
    assert steps == list(range(steps[0], steps[-1] + 1))
    assert steps[0] >= 3 and steps[-1] <= 26 and 5 <= len(steps) <= 14, steps
    # The report-size estimate of `nsysgen plan` holds for this real report, within the error
    # the calibration states.
    config = pipeline.typed(
        Composer()
        .compose(
            [
                "cluster=local",
                f"cluster.shared_fs={local_cluster.shared_fs}",
                "nsight=2023.4.4",
                "workload=python",
                "capture=window",
                "capture.delay=2",
                "capture.duration=2",
                "capture.trace=[nvtx,osrt]",
            ]
        )
        .data
    )
    estimate = estimate_report_size(config).bytes_per_report
    actual = reports[0].stat().st_size
    stated = json.loads((REPO / "nsysgen" / "profile" / "calibration.json").read_text())
    assert abs(estimate - actual) / actual * 100 <= stated["max_abs_error_percent"], (
        estimate,
        actual,
    )


def test_recipes_script_converts_leftover_qdstrm_and_runs_recipes(
    local_cluster: LocalCluster, nsys_2023: Path
) -> None:
    name = "e2e-recipes"
    folder = local_cluster.compile_program(
        name,
        ["--steps=6"],
        "capture=window",
        "capture.delay=0",
        "capture.duration=0",
        "capture.ranks=one_per_node",
        "capture.trace=[nvtx,osrt]",
        "capture.recipes=[nvtx_sum,osrt_sum]",
    )
    # Without the importer next to nsys, reports stay .qdstrm, as on a cluster where only the
    # target half of Nsight was installed; recipes.sh must convert them first.
    link = nsys_2023.parent.parent / "host-linux-x64"
    target = link.readlink()
    link.unlink()
    try:
        code, job_id, log = local_cluster.sbatch_wait(folder)
    finally:
        link.symlink_to(target)
    assert code == 0, log
    report_dir = local_cluster.shared_fs / "nsight-reports" / name / f"job{job_id}"
    stems = {f"{name}_job{job_id}_rank{r}_node{r // 8}_{NODE_OF[r]}" for r in (0, 8)}
    assert {p.stem for p in report_dir.glob("*.qdstrm")} == stems
    assert not list(report_dir.glob("*.nsys-rep"))

    proc = subprocess.run([str(folder / "recipes.sh")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("recipes.sh: converting ") == 2
    assert {p.stem for p in report_dir.glob("*.nsys-rep")} == stems
    out = report_dir / "recipes"
    for recipe in ("nvtx_sum", "osrt_sum"):
        produced = {p.name for p in (out / recipe).iterdir()}
        assert {"all_stats.parquet", f"{recipe}.nsys-analysis"} <= produced, produced
    # The per-range statistics hold every step, once from each of the two reports.
    venv_python = out / ".venv" / "bin" / "python3"
    read = subprocess.run(
        [
            str(venv_python),
            "-c",
            "import sys, pandas; d = pandas.read_parquet(sys.argv[1]); "
            "print(sorted((str(t), int(c)) for t, c in d['Count'].items()))",
            str(out / "nvtx_sum" / "all_stats.parquet"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert read.stdout.strip() == str([(f"step {i}", 2) for i in range(6)]), read.stdout


def test_failing_profiled_rank_is_named_and_fails_the_job(
    local_cluster: LocalCluster, nsys_2023: Path
) -> None:
    name = "e2e-fail"
    folder = local_cluster.compile_program(
        name,
        ["--steps=2", "--fail-rank=8"],
        "capture=window",
        "capture.delay=0",
        "capture.duration=0",
        "capture.ranks=[8]",
        "capture.trace=[nvtx]",
    )
    code, _, log = local_cluster.sbatch_wait(folder)
    assert code != 0
    assert "node2: task 8: Exited with exit code 1" in log, log


def test_missing_nsys_stops_with_one_line_reason(local_cluster: LocalCluster) -> None:
    name = "e2e-no-nsys"
    folder = local_cluster.compile_program(
        name,
        ["--steps=1"],
        "cluster.nsight_root=/nonexistent/nsight",
        "capture.ranks=[3]",
    )
    code, _, log = local_cluster.sbatch_wait(folder)
    assert code != 0
    assert (
        "3: nsys-exec: task 3 on node1: no nsys at /nonexistent/nsight/usr/lib/x86_64-linux-gnu/"
        "nsight-systems/target-linux-x64/nsys (run install-nsight.sh first)" in log
    ), log
    assert "+ " not in log  # no shell trace
    assert sorted(markers(folder)) == [r for r in range(16) if r != 3]


def test_analyze_reads_the_cpu_reports_of_a_job(
    local_cluster: LocalCluster,
    nsys_2023: Path,
    run_cli: RunCli,
) -> None:
    name = "e2e-analyze"
    folder = local_cluster.compile_program(
        name,
        ["--steps=4"],
        "capture=window",
        "capture.delay=0",
        "capture.duration=0",
        "capture.ranks=[0,8]",
        "capture.trace=[nvtx,osrt]",
    )
    code, job_id, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log
    report_dir = local_cluster.shared_fs / "nsight-reports" / name / f"job{job_id}"
    result = run_cli("analyze", str(report_dir), "--nsys", str(nsys_2023))
    assert result.code == 0, result.err
    # CPU reports hold no NCCL kernels: the exports are made, the tables are empty.
    assert "no NCCL kernels in 2 report(s): nothing to plot" in result.out
    assert len(list(report_dir.glob("*.sqlite"))) == 2
    calls = (report_dir / "analysis" / "nccl_calls.csv").read_text().splitlines()
    assert calls == ["report,op,size_bytes,kernel,start_ns,duration_us"]


ARGV_DUMP = """import json, os, sys
rank = os.environ["SLURM_PROCID"]
with open(os.path.join(os.environ["DUMP_DIR"], rank + ".json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "hostile": os.environ.get("HOSTILE")}, f)
"""
HOSTILE_VALUES = [
    "two words",
    "it's",
    'say "hi"',
    "$(touch {mark})",
    "`touch {mark}`",
    "; touch {mark}",
    "-rf",
    "*",
    "../..",
    "ünï ✓",
    "%q{SLURM_PROCID}",
    "a\\b",
]


@pytest.mark.slurm
def test_hostile_values_arrive_intact_through_real_slurm(
    local_cluster: LocalCluster, nsys_2023: Path
) -> None:
    """Every hostile value reaches the program as one argument (and the environment as one
    value) through the real sbatch, srun and nsys-exec; nothing is executed."""
    mark = local_cluster.shared_fs / "PWNED"
    values = [v.replace("{mark}", str(mark)) for v in HOSTILE_VALUES]
    script = local_cluster.shared_fs / "argv_dump.py"
    script.write_text(ARGV_DUMP)
    dump = local_cluster.shared_fs / "argv"
    dump.mkdir()
    # Hydra's quoted strings: only a quote needs a backslash (and one just before it).
    quoted = ",".join("'" + v.replace("'", "\\'") + "'" for v in values)
    folder = local_cluster.compile(
        "workload=python",
        f"workload.python.interpreter={sys.executable}",
        f"workload.python.script={script}",
        f"workload.python.args=[{quoted}]",
        f"+cluster.env.DUMP_DIR={dump}",
        "+cluster.env.HOSTILE='$(touch " + str(mark) + ") `x` \"q\" it\\'s'",
        "+target.sbatch.comment='nightly # build; $(touch " + str(mark) + ")'",
        "capture.ranks=[1]",
        "job.name=hostile",
    )
    code, job_id, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log
    results = [json.loads(p.read_text()) for p in sorted(dump.glob("*.json"))]
    assert len(results) == 16
    for result in results:
        assert result["argv"] == values
        assert result["hostile"] == f'$(touch {mark}) `x` "q" it\'s'
    assert not mark.exists()
    job = subprocess.run(
        ["scontrol", "show", "job", job_id], env=local_cluster.env, capture_output=True, text=True
    ).stdout
    assert f"Comment=nightly # build; $(touch {mark})" in job, job
    assert "NumNodes=2" in job and "TimeLimit=01:00:00" in job, job
