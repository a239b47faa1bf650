"""verify's export of a report that the real nsys cannot read: the report is named unreadable,
and nothing of the failed export is left beside it, where the next verify and `nsysgen analyze`
would take it for the report's current export (it is newer than the report)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import REPO, RunCli

REPORT = REPO / "tests" / "data" / "gpu" / "steps-launch-window-40-44.nsys-rep"


@pytest.mark.nsys
def test_a_report_nsys_cannot_export_leaves_no_export_behind(
    tmp_path: Path, run_cli: RunCli, real_nsys: Path
) -> None:
    out = tmp_path / "generated"
    made = run_cli("workload=nccl", "capture=window", "job.name=a", f"output_dir={out}")
    assert made.code == 0, made.err
    run_dir = tmp_path / "reports" / "job41"
    run_dir.mkdir(parents=True)
    # 4 KiB of garbage in its middle: nsys 2023.4.4 stops with a ProtobufParseException, its
    # export's first tables already written.
    data = bytearray(REPORT.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = random.Random(0).randbytes(4096)
    report = run_dir / "a_job41_rank0_node0_n0.nsys-rep"
    report.write_bytes(bytes(data))
    args = ("verify", str(out / "a"), "--reports", str(run_dir), "--nsys", str(real_nsys))
    for _ in range(2):  # the second run exports again: nothing of the first one's to reuse
        result = run_cli(*args)
        assert result.code == 1, result.out + result.err
        assert "UNREADABLE" in result.out and "nsys export failed" in result.out, result.out
        assert [p.name for p in run_dir.iterdir()] == [report.name]
