"""Issue 24's GPU proof, re-checked here: the SQLite exports nsys 2025.3.1 wrote on one H200 of
the reports of three public training scripts (bench/gpu/steps24/: nanoGPT with gradient
accumulation, the DDP tutorial under torchrun with 2 ranks in one nsys session, a Lightning
Fabric trainer whose forward runs inside optimizer.step), each recorded with the zero-patch step
helper and with the training-loop patch, go through `nsysgen verify` as it reads them on the
cluster (an up-to-date export next to its report is read, not made again; nsys 2023.4.4 here
cannot read 2025 reports). The claims: every setup is complete, with exactly the declared steps,
each holding one optimizer step; and a report with one optimizer step removed is not."""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from nsysgen.reports.contract import read_expect
from nsysgen.shipped.verify import main as verify
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "gpu-steps24"
RESULTS = REPO / "bench" / "gpu" / "results" / "steps24-2026-12-01.json"
SETUPS = sorted(p.name.removesuffix(".expect.json") for p in DATA.glob("*.expect.json"))


def lay_out(tmp_path: Path, setup: str) -> tuple[Path, Path]:
    """The setup's folder (its nsysgen-expect.json) and report folder as the job left them."""
    folder, reports = tmp_path / setup, tmp_path / "reports" / setup
    folder.mkdir(parents=True)
    # As the nsysgen of that run wrote it (format 2, before runs had folders of their own):
    # verify reads it through the contract's converter, unchanged here.
    shutil.copy(DATA / f"{setup}.expect.json", folder / "nsysgen-expect.json")
    (export,) = DATA.glob(f"{setup}_job*.sqlite.xz")
    (reports / ".nsysgen").mkdir(parents=True)
    sqlite_file = reports / export.name.removesuffix(".xz")
    sqlite_file.write_bytes(lzma.decompress(export.read_bytes()))
    # The report itself stays on the device (its export holds what verify reads); a stand-in
    # of the report's name, older than its export, as after `nsys export`.
    report = sqlite_file.with_suffix(".nsys-rep")
    report.write_text("the report's SQLite export is next to it\n")
    os.utime(report, (1, 1))
    # What job.sbatch wrote (scontrol show hostnames).
    (reports / ".nsysgen" / "nodes").write_text("gpunode1\n")
    return folder, reports


def run_verify(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    # nsys 2025.3.1 cannot run here: a stand-in that names its version and refuses to export
    # (the exports are current, so verify must not ask it to).
    nsys = folder / "nsys-2025.3.1"
    nsys.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "NVIDIA Nsight Systems version 2025.3.1.0" '
        "&& exit 0\necho 'not here' >&2\nexit 9\n"
    )
    nsys.chmod(0o755)
    reports = folder.parent / "reports" / folder.name  # the file's report_dir is the cluster's
    code = verify([str(folder), "--json", f"--nsys={nsys}", f"--reports={reports}"])
    return code, json.loads(capsys.readouterr().out)


def test_the_setups_contracts_are_of_an_older_format_read_through_the_converter() -> None:
    for setup in SETUPS:
        data = json.loads((DATA / f"{setup}.expect.json").read_text())
        assert data["format"] == 2 and "run_folders" not in data
        assert read_expect(DATA / f"{setup}.expect.json")["run_folders"] is False


def test_the_results_name_every_setup_complete() -> None:
    setups = json.loads(RESULTS.read_text())["setups"]
    assert sorted(setups) == sorted(
        f"{script}-{method}"
        for script in ("nanogpt", "ddp", "fabric")
        for method in ("hook", "patch")
    )
    assert all(s["verify_exit"] == "0" and s["count_ok"] for s in setups.values())
    assert set(SETUPS) <= set(setups)


@pytest.mark.parametrize("setup", SETUPS)
def test_verify_passes_the_real_reports(
    tmp_path: Path, setup: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = lay_out(tmp_path, setup)
    code, found = run_verify(folder, capsys)
    assert code == 0, found
    assert found["complete"] is True


def test_verify_finds_a_step_without_its_optimizer_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DDP report holds both ranks (one session per node): one rank's step 4 loses its mark."""
    folder, reports = lay_out(tmp_path, "ddp-hook")
    (sqlite_file,) = reports.glob("*.sqlite")
    with sqlite3.connect(sqlite_file) as db:
        marks = db.execute(
            "SELECT e.rowid, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s "
            "ON e.textId = s.id WHERE COALESCE(e.text, s.value) LIKE 'nsysgen optimizer step 4 %'"
        ).fetchall()
        assert len(marks) == 2 and marks[0][1] != marks[1][1]  # one per rank
        db.execute("DELETE FROM NVTX_EVENTS WHERE rowid = ?", (marks[0][0],))
    os.utime(sqlite_file)
    code, found = run_verify(folder, capsys)
    assert code == 1
    problems = [p for report in found["reports"] for p in report["problems"]]  # type: ignore[attr-defined]
    # The rank whose mark went, by its pid (609 or 610 in this report).
    assert any(re.search(r"step 4 of process 6(09|10): 0", p) for p in problems), problems
