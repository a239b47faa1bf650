"""NCCL sizes against the fabric (issue 39 item 3): the cluster's NVLink and EFA figures as the
yardstick, sizes far below it or slower than a larger size flagged with the reason.

Real data: tests/data/gpu/nccl-allreduce.sqlite (one rank on an H100, nccl-tests-like sizes), where
the 64 KiB all-reduce (median 33.8 us) is slower than the 1 MiB one (12.3 us)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.judge import fabric
from nsysgen.analyze.judge.bandwidth import nccl_by_size
from nsysgen.analyze.read.report import read_export
from tests.analyze.export_tables import TABLES
from tests.conftest import REPO, CliResult, RunCli

ALLREDUCE = REPO / "tests" / "data" / "gpu" / "nccl-allreduce.sqlite"


def test_cluster_by_name_and_by_file(tmp_path: Path) -> None:
    p5 = fabric.from_cluster("p5")
    assert p5 == {
        "source": "--cluster p5",
        "gpus_per_node": 8,
        "nodes": 2,
        "nvlink_GBps": 450.0,
        "efa_Gbps": 3200.0,
    }
    own = tmp_path / "mine.yaml"
    own.write_text("gpus_per_node: 4\nnodes: 3\nnetwork:\n  nvlink_GBps: null\n  efa_Gbps: 400\n")
    assert fabric.from_cluster(str(own))["efa_Gbps"] == 400.0
    # Within a node NVLink is the yardstick; across nodes, the node's EFA in GB/s.
    assert fabric.expected(p5, 8) == (450.0, "NVLink 450 GB/s per GPU")
    assert fabric.expected(p5, 16) == (400.0, "EFA 3200 Gbps per node")
    assert fabric.expected(p5, 1) is None
    assert fabric.expected(fabric.from_cluster(str(own)), 4) is None  # NVLink unknown


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: 1\nnetwork: {nvlink_GBps: 1}\n", "gpus_per_node: None is not a whole number"),
        ("gpus_per_node: 8\n", "no network block"),
        ("gpus_per_node: 8\nnetwork: {nvlink_GBps: fast}\n", "network.nvlink_GBps: 'fast' is not"),
    ],
)
def test_bad_cluster_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(AnalyzeError, match=message):
        fabric.from_cluster(str(bad))


def test_unknown_cluster_name_exits_2_naming_the_allowed(tmp_path: Path, run_cli: RunCli) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(ALLREDUCE, folder / ALLREDUCE.name)
    result: CliResult = run_cli("analyze", str(folder), "--cluster", "p9", "--serial")
    assert result.code == 2
    assert "--cluster p9: no such cluster (allowed: local, p4d, p4de, p5, p5e, p5en" in result.err
    assert not (folder / "analysis").exists()


def sizes(world: int, found: fabric.Fabric | None) -> dict[str, Any]:
    rows = nccl_by_size(read_export(ALLREDUCE).calls, world, found)
    return {row["size"]: row for row in rows}


def test_real_export_flags_64_kib_slower_than_1_mib() -> None:
    rows = sizes(1, None)  # one rank, no fabric: the time rule still holds
    assert rows["64 KiB"]["flag"] == (
        "64 KiB takes 33.8 us, longer than the larger 1 MiB (12.3 us)"
    )
    assert rows["1 KiB"]["flag"] is None and rows["128 MiB"]["flag"] is None
    assert rows["128 MiB"]["expected_busbw_GBps"] is None


def test_sizes_far_below_the_fabric_are_flagged() -> None:
    # The same calls as if from 8 ranks of a p5 node: bus bandwidth against NVLink's 450 GB/s.
    # 128 MiB in 464 us is 506 GB/s of bus bandwidth (over 100 %); 16 MiB in 72 us is 406 GB/s
    # but too small to be bandwidth-bound here (54 MB at 450 GB/s is 4 x 30 us).
    rows = sizes(8, fabric.from_cluster("p5"))
    assert rows["128 MiB"]["fraction_of_expected"] == pytest.approx(1.124, abs=0.01)
    assert rows["128 MiB"]["flag"] is None
    # A planted slow size: 256 MiB at 50 GB/s of bus bandwidth on that node is 11 % of NVLink's;
    # 1 MiB at 5 GB/s is latency-bound (too small to judge against the link).
    planted = [
        {"op": "ncclAllReduce", "size_bytes": 1 << 20, "size": "1 MiB", "median_us": 367.0,
         "busbw_GBps": 5.0},
        {"op": "ncclAllReduce", "size_bytes": 256 << 20, "size": "256 MiB", "median_us": 9395.0,
         "busbw_GBps": 50.0},
    ]  # fmt: skip
    small, large = fabric.judge(planted, fabric.from_cluster("p5"), 8)
    assert small == {"expected_busbw_GBps": 450.0, "fraction_of_expected": 0.0111, "flag": None}
    assert large["flag"] == (
        "bus bandwidth 50.0 GB/s is 11 % of what NVLink 450 GB/s per GPU should give (450 GB/s)"
    )


@pytest.mark.slow
def test_summary_says_when_no_fabric_was_given(tmp_path: Path, run_cli: RunCli) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(ALLREDUCE, folder / ALLREDUCE.name)
    result = run_cli("analyze", str(folder), "--serial", "--output", str(tmp_path / "a"))
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert fabric.NO_FABRIC in summary["limits"] and summary["fabric"] is None
    assert "flagged: ncclAllReduce 64 KiB: 64 KiB takes 33.8 us" in result.out
    with_cluster = run_cli(
        "analyze", str(folder), "--serial", "--output", str(tmp_path / "b"), "--cluster", "p5"
    )
    assert with_cluster.code == 0, with_cluster.err
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["fabric"]["nvlink_GBps"] == 450.0
    assert fabric.NO_FABRIC not in summary["limits"]


def test_fabric_from_the_runs_contract(tmp_path: Path) -> None:
    """A compiled setup's contract (the golden p5 one) beside the run's folder gives the fabric;
    one written before the fabric block existed gives none."""
    golden = REPO / "tests" / "golden" / "default" / "out" / "nccl-p5-slurm" / "nsysgen-expect.json"
    contract = json.loads(golden.read_text())
    run = tmp_path / "reports" / "job12"
    run.mkdir(parents=True)
    contract["fabric"] = {"gpus_per_node": 8, "nodes": 2, "nvlink_GBps": 300, "efa_Gbps": 400}
    (tmp_path / "reports" / "nsysgen-expect.json").write_text(json.dumps(contract))
    found = fabric.from_expect(run)
    assert found is not None and (found["nvlink_GBps"], found["efa_Gbps"]) == (300, 400)
    assert found["source"] == str(tmp_path / "reports" / "nsysgen-expect.json")
    # The same contract named by --cluster (the generated analyze.sbatch's reports are elsewhere).
    named = fabric.from_cluster(str(tmp_path / "reports" / "nsysgen-expect.json"))
    assert named["efa_Gbps"] == 400 and named["source"].startswith("--cluster ")
    del contract["fabric"]
    (tmp_path / "reports" / "nsysgen-expect.json").write_text(json.dumps(contract))
    assert fabric.from_expect(run) is None
    assert fabric.from_expect(tmp_path / "elsewhere") is None
    with pytest.raises(AnalyzeError, match="no fabric block in it"):
        fabric.from_cluster(str(tmp_path / "reports" / "nsysgen-expect.json"))


def sized_rank(path: Path, slow: int) -> Path:
    """One rank of an 8-rank job: per step an all-reduce of 1 MiB, 64 MiB and 256 MiB, each in a
    range named with its size; the `slow` size planted at 2 ms."""
    tid, pid = (88 << 24) | 1, 88
    timings = {1 << 20: 30_000, 64 << 20: 400_000, 256 << 20: 1_342_000} | {slow: 2_000_000}
    db = sqlite3.connect(path)
    db.executescript(
        TABLES + "INSERT INTO StringIds VALUES (1, 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL');"
    )
    corr = 0
    for step in range(4):
        t = step * 100_000_000
        for size, duration in sorted(timings.items()):
            corr += 1
            db.execute(
                "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0, NULL)",
                (t, t + 10_000, f"all_reduce {size}", tid),
            )
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 0)",
                (t + 1_000, t + 5_000, tid, corr),
            )
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, ?, 1)",
                (t + 20_000, t + 20_000 + duration, corr, pid << 24),
            )
            t += 5_000_000
    db.commit()
    db.close()
    return path


def test_a_planted_slow_size_on_8_ranks_is_flagged_with_its_reasons(tmp_path: Path) -> None:
    calls = [
        call
        for rank in range(8)
        for call in read_export(sized_rank(tmp_path / f"s_rank{rank}.sqlite", 64 << 20)).calls
    ]
    rows = {r["size"]: r for r in nccl_by_size(calls, 8, fabric.from_cluster("p5"))}
    assert [r["calls"] for r in rows.values()] == [32, 32, 32]
    assert rows["1 MiB"]["flag"] is None  # 61 GB/s, but latency-bound: not judged by the link
    assert rows["256 MiB"]["flag"] is None
    assert rows["256 MiB"]["fraction_of_expected"] == pytest.approx(0.777, abs=0.001)
    assert rows["64 MiB"]["flag"] == (
        "bus bandwidth 58.7 GB/s is 13 % of what NVLink 450 GB/s per GPU should give "
        "(450 GB/s); 64 MiB takes 2000.0 us, longer than the larger 256 MiB (1342.0 us)"
    )
