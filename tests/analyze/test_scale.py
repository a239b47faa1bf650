"""Issue 18: plan and lints at 100,000 nodes by reasoning on ranges and name patterns, the
analysis job's size, and `nsysgen analyze` on Dask with its export cache. Issue 39: a planted
straggler and a planted slow message size found at 8, 64 and 1,024 ranks (synthetic exports
shaped like nsys 2025.3.1's, bench/synth_export.py)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze import record as analyze_record
from nsysgen.profile import plan
from nsysgen.profile.plan import RecordedTasks
from nsysgen.targets.slurm import tasks as slurm_tasks
from tests.analyze.test_analyze import GPU_SQLITE, fake_nsys
from tests.bench.synth import analyze, by_size, planted_job, step_of
from tests.conftest import RunCli

HUGE = ["cluster=p5", "cluster.nodes=100000", "lints.max_profiled_ranks=1000000"]


def test_a_hundred_thousand_nodes_plan_as_ranges(run_cli: RunCli) -> None:
    plan = json.loads(run_cli("plan", "--json", *HUGE, "capture.ranks=all").out)
    assert plan["recorded_count"] == 800_000 and plan["recorded_tasks"] == "ranks 0-799999"
    assert plan["reports_per"] == "one report per rank" and plan["report_names_unique"]
    assert len(plan["recording"]) == 8
    node = json.loads(run_cli("plan", "--json", *HUGE, "capture.ranks=one_per_node").out)
    assert node["recorded_tasks"] == "local rank 0 of nodes 0-99999"
    assert node["reports_per"] == "one report per node" and node["recorded_nodes"] == 100_000
    assert node["analysis"]["nodes"] > 1


def test_lints_hold_at_a_hundred_thousand_nodes(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per finding
    shared = run_cli("plan", *HUGE, "capture.ranks=all", "capture.report_name=same")
    assert shared.code == 2
    assert "NSG002 capture.report_name: 1 report name(s) are shared by several tasks" in shared.out
    assert "(800000 tasks)" in shared.out
    per_node = run_cli(
        "plan", *HUGE, "capture.ranks=all", "capture.report_name='r_%q{SLURM_NODEID}'"
    )
    assert "100000 report name(s) are shared" in per_node.out and "(8 tasks)" in per_node.out


def test_compile_names_a_few_reports_not_every_one(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiling 100,000 nodes x 64 GPUs with every rank recorded (6.4 million reports) builds a
    handful of report names (probes of the name pattern, lints), never one per rank: the files
    (nsysgen-expect.json included) keep ranges and patterns."""
    built = Counter[str]()
    real = plan.expand_name

    def counting(template: str, env: dict[str, str], host: str, pid: str) -> str:
        built["names"] += 1
        return real(template, env, host, pid)

    monkeypatch.setattr(slurm_tasks, "expand_name", counting)
    args = [
        *HUGE,
        "cluster.gpus_per_node=64",
        "capture.ranks=all",
        "lints.max_profiled_ranks=7000000",
    ]
    result = run_cli(*args, f"output_dir={tmp_path}")
    assert result.code == 0, result.out + result.err
    assert 0 < built["names"] < 100
    expect = (tmp_path / "nccl-p5-slurm" / "nsysgen-expect.json").read_text()
    assert len(expect) < 4000


def test_expand_a_chosen_rank_range(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per report name
    result = run_cli("plan", *HUGE, "capture.ranks=all", "--ranks", "799998-799999")
    names = [line for line in result.out.splitlines() if line.startswith("  /fsx")]
    assert [n.split("_rank")[1].split("_")[0] for n in names] == ["799998", "799999"]
    some = json.loads(run_cli("plan", "--json", *HUGE, "capture.ranks=all", "--expand", "20").out)
    assert len(some["recording"]) == 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expand", "0"], "--expand '0': not a count"),
        (["--expand", "x"], "--expand 'x': not a count"),
        (["--ranks", "9-2"], "9 > 2"),
        (["--ranks", "a-b"], "not a range"),
        (["--ranks"], "--ranks needs a value"),
    ],
)
def test_bad_expand_options_exit_2(run_cli: RunCli, args: list[str], message: str) -> None:
    result = run_cli("plan", *args)
    assert result.code == 2 and message in result.err


PATTERNS = {
    "task": lambda t, n, lo: f"r{t}",
    "node": lambda t, n, lo: f"n{n}",
    "local": lambda t, n, lo: f"l{lo}",
    "node+local": lambda t, n, lo: f"n{n}l{lo}",
    "none": lambda t, n, lo: "same",
}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize(
    ("nodes", "per_node", "locals_"),
    [(1, 1, (0,)), (3, 4, (0, 1, 2, 3)), (3, 4, (0,)), (2, 8, (0, 5)), (5, 2, (0, 1))],
)
def test_reasoning_on_patterns_agrees_with_enumeration(
    pattern: str, nodes: int, per_node: int, locals_: tuple[int, ...]
) -> None:
    collecting = set(locals_[:2])
    for start in (0, 1):
        tasks = RecordedTasks(
            per_node, "rank", PATTERNS[pattern], lambda t, n, lo: lo in collecting,
            start, nodes, locals_=locals_,
        )  # fmt: skip
        every = list(tasks)
        assert len(every) == len(tasks) == (nodes - start) * len(locals_)
        counts = Counter(t.report for t in every)
        repeated = [name for name, count in counts.items() if count > 1]
        found, example, shared = tasks.collisions()
        assert found == len(repeated)
        if repeated:
            assert counts[example] == shared
        per_node_count = Counter(t.node for t in every if t.collectors)
        crowded = [node for node, count in per_node_count.items() if count > 1]
        assert tasks.crowded_nodes()[0] == len(crowded)
        assert tasks.collector_count == sum(t.collectors for t in every)
        assert tasks.collector_tasks(5) == [t.task for t in every if t.collectors][:5]
        assert [t.task for t in tasks.between(2, 9)] == [t.task for t in every if 2 <= t.task <= 9]


@pytest.mark.slow
def test_exports_are_cached_and_a_changed_report_is_exported_again(
    tmp_path: Path, run_cli: RunCli
) -> None:
    log = tmp_path / "nsys.log"
    tool = fake_nsys(tmp_path, log)
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("a", "b"):
        (reports / f"{name}.nsys-rep").write_bytes(b"report " + name.encode())

    def run() -> int:
        result = run_cli("analyze", str(reports), "--nsys", str(tool), "--serial")
        assert result.code == 0, result.err
        lines = log.read_text().splitlines() if log.exists() else []
        return len([line for line in lines if "--help" not in line])  # the exports

    assert run() == 2
    assert run() == 2  # cached: nsys not run again
    assert json.loads((reports / "a.nsysgen-export.json").read_text())["size"] == 8
    # Same size, same mtime, other content: the key's hash catches it.
    changed = reports / "b.nsys-rep"
    stat = changed.stat()
    changed.write_bytes(b"report c")
    import os

    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert run() == 3
    assert not list(reports.glob(".*"))  # no partial exports left


def _compared(path: Path) -> bool:
    """Not the pictures (drawn alike, but their bytes are not the point here), nor the run
    record (it names the reports' keys, and these are other copies)."""
    return path.suffix != ".png" and path.name != analyze_record.RECORD


@pytest.mark.slow
def test_dask_results_are_identical_to_the_single_process_path(
    tmp_path: Path, run_cli: RunCli
) -> None:
    outputs = {}
    for how in (["--serial"], ["--workers", "2"]):
        # Reports of their own: the second run must compute, not read the first one's cache.
        reports = tmp_path / f"reports{how[0]}"
        reports.mkdir()
        for rank in range(3):
            shutil.copy(GPU_SQLITE, reports / f"job_rank{rank}.sqlite")
        out = tmp_path / how[0].strip("-")
        result = run_cli("analyze", str(reports), *how, "--output", str(out))
        assert result.code == 0, result.err
        outputs[how[0]] = (
            result.out.replace(str(out), "OUT"),
            {p.name: p.read_bytes() for p in sorted(out.iterdir()) if _compared(p)},
        )
    assert outputs["--serial"] == outputs["--workers"]
    assert sorted(outputs["--serial"][1]) == sorted(
        p.name for p in (tmp_path / "serial").iterdir() if _compared(p)
    )


@pytest.mark.slow
def test_on_a_local_cluster_every_report_is_exported_once_some_while_it_starts(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The exports this process makes while the cluster starts (nsysgen/analyze/read/head_start.py)
    are read by the workers, not made again, and the results are the single process's."""
    log = tmp_path / "nsys.log"
    tool = fake_nsys(tmp_path, tmp_path / "fake.log")
    logged = tmp_path / "nsys-pid"  # the fake, logging the process that ran it and what for
    logged.write_text(f'#!/bin/sh\necho "$PPID $*" >> "{log}"\nexec "{tool}" "$@"\n')
    logged.chmod(0o755)
    outputs = {}
    for how in (["--serial"], ["--workers", "2"]):
        reports = tmp_path / f"reports{how[0]}"
        reports.mkdir()
        for rank in range(6):
            (reports / f"job_rank{rank}.nsys-rep").write_bytes(f"report {rank}".encode())
        out = tmp_path / how[0].strip("-")
        log.unlink(missing_ok=True)
        result = run_cli("analyze", str(reports), *how, "--nsys", str(logged), "--output", str(out))
        assert result.code == 0, result.err
        runs = [line.split()[0] for line in log.read_text().splitlines() if "--help" not in line]
        assert len(runs) == 6  # one export per report: none made twice
        if how[0] == "--workers":
            assert str(os.getpid()) in runs  # this process's head start made some
        outputs[how[0]] = (
            result.out.replace(str(out), "OUT"),
            {p.name: p.read_bytes() for p in sorted(out.iterdir()) if _compared(p)},
        )
    assert outputs["--serial"] == outputs["--workers"]


SLOW_SIZE = 1 << 20  # of 64 KiB, 1 MiB and 16 MiB: its bus bandwidth is a twentieth of the others'
# ranks -> {late rank: {step: ms}}: a slow rank on half the judged steps or more, and a hiccup on
# one, on another node; the window's edges (steps 8 and 15) are never judged. At 64 ranks the
# slow rank is late on 5 of the 8 steps: the waiting ranks' kernels hold the wait of the
# collective it holds up (the step's first, 16 MiB), which the bandwidth takes out.
PLANTED = {
    8: {5: {10: 30.0, 12: 30.0, 13: 30.0}},
    64: {37: dict.fromkeys((9, 10, 11, 12, 13), 25.0), 2: {14: 15.0}},
    1024: {700: {10: 30.0, 12: 30.0, 13: 30.0}, 3: {11: 20.0}},
}


def check_planted(summary: dict[str, Any], planted: dict[int, dict[int, float]]) -> None:
    """Every view of summary.json names the planted ranks, their steps and delays, and the
    ranks that waited for them; and the planted slow size stands out."""
    found = {s["rank"]: s for s in summary["stragglers"]}
    assert sorted(found) == sorted(planted)
    for rank, steps in planted.items():
        straggler = found[rank]
        assert straggler["steps"] == sorted(steps)
        assert straggler["evidence"] == ["collectives"]
        assert straggler["kind"] == ("slow rank" if len(steps) >= 3 else "hiccup")
        mean = statistics.fmean(steps.values())
        assert straggler["mean_lateness_ms"] == pytest.approx(mean, abs=0.1)
        other = next(r for r in range(summary["world_size"]) if r not in planted)
        for number, ms in steps.items():
            assert step_of(summary, rank, number)["wait_ms"] == pytest.approx(0.0, abs=0.01)
            assert step_of(summary, other, number)["wait_ms"] == pytest.approx(ms, abs=0.1)
    # The rank the others waited for on each judged step, and no other step blamed.
    late_steps = {step: rank for rank, steps in planted.items() for step in steps}
    judged = {s["step"]: s for s in summary["by_step"] if s["judged"]}
    assert sorted(judged) == [9, 10, 11, 12, 13, 14]
    assert {n: s["late_rank"] for n, s in judged.items()} == {n: late_steps.get(n) for n in judged}
    for number, rank in late_steps.items():
        assert judged[number]["waited_count"] == summary["world_size"] - 1
        assert rank not in judged[number]["waited"]
    # The verdict names the worst straggler first.
    worst = max(planted, key=lambda r: sum(planted[r].values()))
    assert summary["verdict"]["late_rank"] == worst
    # The slow size: the lowest bus bandwidth, slower than a size 16 times larger, and flagged;
    # both from each call's transfer time (its wait for the late rank taken out).
    sizes = by_size(summary)
    assert sorted(sizes) == [1 << 16, SLOW_SIZE, 1 << 24]
    assert min(sizes, key=lambda s: sizes[s]["transfer_busbw_GBps"]) == SLOW_SIZE
    assert sizes[SLOW_SIZE]["transfer_median_us"] > sizes[1 << 24]["transfer_median_us"]
    assert sizes[1 << 24]["transfer_busbw_GBps"] == pytest.approx(100.0, rel=0.1)  # the fabric's
    assert sizes[SLOW_SIZE]["flag"] and not sizes[1 << 24]["flag"]


SLOW = pytest.mark.slow


@pytest.mark.parametrize("ranks", [8, pytest.param(64, marks=SLOW), pytest.param(1024, marks=SLOW)])
def test_planted_straggler_and_slow_size_are_found(
    tmp_path: Path, run_cli: RunCli, ranks: int
) -> None:
    planted = PLANTED[ranks]
    planted_job(tmp_path / "reports", ranks, planted, SLOW_SIZE)
    placement = ["--serial"] if ranks < 1024 else ["--workers", "2"]
    summary = analyze(run_cli, tmp_path / "reports", tmp_path / "out", *placement)
    assert summary["world_size"] == ranks and len(summary["ranks"]) == ranks
    check_planted(summary, planted)
