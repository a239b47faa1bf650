"""`nsysgen analyze` on a real GPU report (2 x H200, torch.distributed all-reduce over five
message sizes, nsys 2025.3.1), and the recipes that fit a capture."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from nsysgen.cli import main
from tests.conftest import REPO, CliResult, RunCli

INSTALL_HINT = "pip install 'nsysgen[analyze]'"
CALLS_IN_GPU_REPORT = 5 * 21

GPU_SQLITE = REPO / "tests" / "data" / "gpu" / "nccl-allreduce.sqlite"
SIZES = [1024, 65536, 1048576, 16777216, 134217728]
NCCL_TESTS_LOG = """\
# nThread 1 nGpus 1 minBytes 1024 maxBytes 134217728 step: 64(factor) warmup iters: 1 iters: 20
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    14.20    0.07    0.07      0    13.90    0.07    0.07      0
   134217728      33554432     float     sum      -1   470.10  285.51  285.51      0   469.80  285.69  285.69      0
"""


Analysed = tuple[Path, CliResult]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Analysed:
    """One analysis (plots included, the slow part) for every test that reads its outputs."""
    tmp_path = tmp_path_factory.mktemp("analysed")
    shutil.copy(GPU_SQLITE, tmp_path / GPU_SQLITE.name)
    log = tmp_path / "nccl-tests.log"
    log.write_text(NCCL_TESTS_LOG)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["analyze", str(tmp_path), "--nccl-tests-log", str(log)])
    assert code == 0, err.getvalue()
    return tmp_path / "analysis", CliResult(code, out.getvalue(), err.getvalue())


def test_calls_sizes_and_counts_match_what_the_program_did(analysed: Analysed) -> None:
    out, _ = analysed
    with (out / "nccl_calls.csv").open() as handle:
        calls = list(csv.DictReader(handle))
    # The program made 21 all-reduces per size (one warm-up outside the sized NVTX range).
    summary = json.loads((REPO / "bench/gpu/results/prove-2026-11-29.json").read_text())
    per_size = summary["issue8_nccl"]["sizes"]["calls_per_size"]
    assert {int(k): v for k, v in per_size.items()} == dict.fromkeys(SIZES, 21)
    assert len(calls) == 5 * 21
    assert all(c["op"] == "ncclAllReduce" for c in calls)
    assert all(c["kernel"] == "ncclDevKernel_AllReduce_Sum_f32_RING_LL" for c in calls)
    sized = [int(c["size_bytes"]) for c in calls if c["size_bytes"]]
    assert {size: sized.count(size) for size in SIZES} == dict.fromkeys(SIZES, 20)


def test_size_summary_and_that_big_messages_take_longer(analysed: Analysed) -> None:
    out, result = analysed
    with (out / "nccl_by_size.csv").open() as handle:
        rows = {r["size"]: r for r in csv.DictReader(handle)}
    assert list(rows) == ["unknown", "1 KiB", "64 KiB", "1 MiB", "16 MiB", "128 MiB"]
    assert float(rows["128 MiB"]["median_us"]) > 20 * float(rows["1 KiB"]["median_us"])
    assert "ncclAllReduce             128 MiB     20 calls" in result.out


def test_plot_is_a_png_per_operation(analysed: Analysed) -> None:
    out, _ = analysed
    png = out / "nccl_ncclAllReduce_durations.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_analyze_errors_are_input_errors(tmp_path: Path, run_cli: RunCli) -> None:
    empty = run_cli("analyze", str(tmp_path))
    assert (
        empty.code == 2
        and empty.err
        == f"error: {tmp_path}: no .nsys-rep or .sqlite reports; the folder is empty\n"
    )
    (tmp_path / "r.nsys-rep").write_bytes(b"x")
    no_nsys = run_cli("analyze", str(tmp_path), "--nsys", "/nonexistent/nsys")
    assert no_nsys.code == 2 and "no nsys to export .nsys-rep reports with" in no_nsys.err


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["cluster=local", "workload=python", "capture.trace=[nvtx,osrt]", "nsight=2023.4.4"],
            ["nvtx_sum", "osrt_sum"],
        ),
        (
            ["workload=python"],
            [
                "nvtx_sum",
                "cuda_api_sum",
                "cuda_gpu_kern_sum",
                "cuda_gpu_mem_time_sum",
                "cuda_gpu_time_util_map",
                "nvtx_gpu_proj_sum",
            ],
        ),
        (
            ["experiment=nccl-scatter-p4de"],
            [
                "nvtx_sum",
                "cuda_api_sum",
                "cuda_gpu_kern_sum",
                "cuda_gpu_mem_time_sum",
                "cuda_gpu_time_util_map",
                "nvtx_gpu_proj_sum",
                "nccl_sum",
                "nccl_gpu_time_util_map",
            ],
        ),
        (
            [
                "capture.efa_metrics=true",
                "capture.gpu_metrics=true",
                "capture.pace_kernels=[ncclDevKernel_AllReduce_Sum_f32_RING_LL]",
            ],
            [
                "nvtx_sum",
                "cuda_api_sum",
                "cuda_gpu_kern_sum",
                "cuda_gpu_mem_time_sum",
                "cuda_gpu_time_util_map",
                "nvtx_gpu_proj_sum",
                "nccl_sum",
                "nccl_gpu_time_util_map",
                "gpu_metric_util_map",
                "network_map_aws",
                "cuda_gpu_kern_pace-ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            ],
        ),
    ],
)
def test_recipes_fit_the_capture(overrides: list[str], expected: list[str]) -> None:
    from nsysgen.config.compose import Composer
    from nsysgen.drivers import pipeline
    from nsysgen.profile.recipes import recipe_runs

    config = pipeline.typed(Composer().compose(overrides).data)
    assert [run.folder for run in recipe_runs(config)] == expected


@pytest.mark.slow
def test_sizes_from_nccls_own_payload_match_every_call(tmp_path: Path, run_cli: RunCli) -> None:
    """The same program, exported with --include-blobs true: NCCL's NVTX payload gives every
    call its size, warm-ups included (no enclosing NVTX range needed, as with nccl-tests)."""
    shutil.copy(REPO / "tests/data/gpu/nccl-allreduce-blobs.sqlite", tmp_path)
    result = run_cli("analyze", str(tmp_path))
    assert result.code == 0, result.err
    with (tmp_path / "analysis" / "nccl_calls.csv").open() as handle:
        sizes = [int(row["size_bytes"]) for row in csv.DictReader(handle)]
    summary = json.loads((REPO / "bench/gpu/results/prove-2026-11-29.json").read_text())
    per_size = {int(k): v for k, v in summary["issue8_nccl"]["sizes"]["calls_per_size"].items()}
    assert {size: sizes.count(size) for size in SIZES} == per_size
    assert len(sizes) == sum(per_size.values())


def test_payload_decoding_rejects_what_it_does_not_understand() -> None:
    import struct

    from nsysgen.analyze.read.nccl import _payload_size

    blob = struct.pack("<QQQQ", 1, 77, 24, 32) + struct.pack("<QQQ", 5, 4096, 0)
    assert _payload_size(blob, {77: 8}) == 4096
    assert _payload_size(blob, {78: 8}) is None  # another schema
    assert _payload_size(blob[:20], {77: 8}) is None  # truncated
    assert _payload_size(None, {77: 8}) is None


# Inputs, exports and optional dependencies: input mistakes are exit 2 with "error: ", before
# anything is written.


def fake_nsys(folder: Path, log: Path, *, blobs: bool = False, json: bool = False) -> Path:
    """An nsys whose `export` records its arguments and writes the GPU report's export to its
    --output; its `export --help` names --include-blobs (as 2025.x's does) if `blobs`, and
    --include-json (as 2025.6.1+'s does, per its documentation) if `json`."""
    tool = folder / "nsys"
    lines = [
        *(["echo '  --include-blobs [true|false]'"] if blobs else []),
        *(["echo '  --include-json [true|false]'"] if json else []),
    ]
    switch = "; ".join(lines) or ":"
    tool.write_text(
        f'#!/bin/sh\necho "$@" >> "{log}"\n'
        f'if [ "$2" = --help ]; then {switch}; exit 0; fi\n'
        'while [ "$#" -gt 1 ]; do [ "$1" = --output ] && out=$2; shift; done\n'
        f'cp "{GPU_SQLITE}" "$out"\n'
    )
    tool.chmod(0o755)
    return tool


@pytest.mark.parametrize(("blobs", "json"), [(True, True), (True, False), (False, False)])
def test_the_export_asks_for_blobs_where_nsys_has_them(
    tmp_path: Path, run_cli: RunCli, no_plots: None, blobs: bool, json: bool
) -> None:
    """NCCL's message sizes are NVTX payloads, exported by nsys 2025.x only with
    --include-blobs true; advanced NCCL tracing's tables (2025.6.1+) only with --include-json
    true; nsys 2023.4.4's export has neither switch (the e2e tests run it)."""
    nsys_log = tmp_path / "nsys.log"
    tool = fake_nsys(tmp_path, nsys_log, blobs=blobs, json=json)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.nsys-rep").write_bytes(b"exported by the stand-in")
    result = run_cli("analyze", str(tmp_path / "reports"), "--nsys", str(tool), "--serial")
    assert result.code == 0, result.err
    exported = nsys_log.read_text().splitlines()[-1]
    assert ("--include-blobs true" in exported) is blobs, exported
    assert ("--include-json true" in exported) is json, exported


def report_with_export(folder: Path, *, stale: bool = False) -> tuple[Path, Path]:
    """report.nsys-rep and its export report.sqlite, the export newer (or older) than it."""
    folder.mkdir(parents=True, exist_ok=True)
    report, export = folder / "report.nsys-rep", folder / "report.sqlite"
    report.write_bytes(b"not read when its export is used")
    shutil.copy(GPU_SQLITE, export)
    os.utime(report, (1_000_000, 1_000_000))
    os.utime(export, (900_000, 900_000) if stale else (1_100_000, 1_100_000))
    return report, export


def no_nsys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NSYS", raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def no_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing takes most of a run; these tests are about which calls are read."""
    from nsysgen.analyze import reduce as analyze_reduce

    def skip(op: str, _calls: object, _reference: object, out: Path, _label: str = "") -> Path:
        return out / f"nccl_{op}_durations.png"

    monkeypatch.setattr(analyze_reduce, "plot_op", skip)


def call_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "analysis" / "nccl_calls.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_missing_matplotlib_is_exit_2_with_the_install_command_before_any_write(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    shutil.copy(GPU_SQLITE, reports / "a.sqlite")
    (reports / "b.nsys-rep").write_bytes(b"x")  # would be exported first, were it not checked
    nsys_log = tmp_path / "nsys.log"
    tool = fake_nsys(tmp_path, nsys_log)
    # A None entry in sys.modules makes `import matplotlib` raise ImportError, as if uninstalled.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run_cli("analyze", str(reports), "--nsys", str(tool))
    assert result.code == 2
    assert result.err.startswith("error: ") and INSTALL_HINT in result.err, result.err
    assert "Traceback" not in result.err and result.out == ""
    assert sorted(p.name for p in reports.iterdir()) == ["a.sqlite", "b.nsys-rep"]
    assert not nsys_log.exists()


def test_missing_reports_and_log_are_exit_2(tmp_path: Path, run_cli: RunCli) -> None:
    missing = tmp_path / "nope"
    result = run_cli("analyze", str(missing))
    assert (result.code, result.err) == (2, f"error: {missing}: no such file or folder\n")
    shutil.copy(GPU_SQLITE, tmp_path / "r.sqlite")
    log = tmp_path / "nccl-tests.log"
    result = run_cli("analyze", str(tmp_path), "--nccl-tests-log", str(log))
    assert (result.code, result.err) == (2, f"error: --nccl-tests-log {log}: no such file\n")
    log.mkdir()  # a folder is not a log either
    assert run_cli("analyze", str(tmp_path), "--nccl-tests-log", str(log)).code == 2
    assert not (tmp_path / "analysis").exists()
    other = tmp_path / "notes.txt"
    other.write_text("x")
    result = run_cli("analyze", str(other))
    assert result.code == 2 and result.err.startswith(f"error: {other}: not a report")


@pytest.mark.slow
def test_report_and_its_export_are_read_once_without_nsys(
    tmp_path: Path,
    run_cli: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    no_plots: None,
) -> None:
    no_nsys(monkeypatch, tmp_path)
    report, _ = report_with_export(tmp_path / "reports")
    result = run_cli("analyze", str(report.parent))
    assert result.code == 0, result.err
    rows = call_rows(report.parent)
    assert len(rows) == CALLS_IN_GPU_REPORT
    assert {row["report"] for row in rows} == {"report"}
    # The report named on its own is read through its export too.
    single = run_cli("analyze", str(report), "--output", str(tmp_path / "single"))
    assert single.code == 0, single.err
    with (tmp_path / "single" / "nccl_calls.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == CALLS_IN_GPU_REPORT


@pytest.mark.slow
def test_an_existing_export_is_preferred_to_running_nsys(
    tmp_path: Path, run_cli: RunCli, no_plots: None
) -> None:
    nsys_log = tmp_path / "nsys.log"
    tool = fake_nsys(tmp_path, nsys_log)
    report, _ = report_with_export(tmp_path / "reports")
    result = run_cli("analyze", str(report.parent), "--nsys", str(tool))
    assert result.code == 0, result.err
    assert not nsys_log.exists()
    assert len(call_rows(report.parent)) == CALLS_IN_GPU_REPORT


@pytest.mark.slow
def test_an_export_older_than_its_report_is_redone_or_read_with_a_warning(
    tmp_path: Path,
    run_cli: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    no_plots: None,
) -> None:
    nsys_log = tmp_path / "nsys.log"
    tool = fake_nsys(tmp_path, nsys_log)
    report, export = report_with_export(tmp_path / "with-nsys", stale=True)
    result = run_cli("analyze", str(report.parent), "--nsys", str(tool))
    assert result.code == 0, result.err
    # nsys writes a hidden partial name next to the report, renamed onto the export.
    partial, exported = nsys_log.read_text().split()[-2:]
    assert exported == str(report) and Path(partial).parent == export.parent
    assert Path(partial).name.startswith(".report.") and not Path(partial).exists()
    assert len(call_rows(report.parent)) == CALLS_IN_GPU_REPORT
    no_nsys(monkeypatch, tmp_path)
    report, export = report_with_export(tmp_path / "without-nsys", stale=True)
    result = run_cli("analyze", str(report.parent))
    assert result.code == 0, result.err
    assert f"warning: {export} is older than report.nsys-rep" in result.err
    assert len(call_rows(report.parent)) == CALLS_IN_GPU_REPORT


def test_a_report_without_export_needs_nsys(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_nsys(monkeypatch, tmp_path)
    (tmp_path / "r.nsys-rep").write_bytes(b"x")
    result = run_cli("analyze", str(tmp_path))
    assert result.code == 2 and result.err.startswith("error: no nsys to export"), result.err


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_does_nothing_else(
    flag: str, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("analyze", flag)
    assert result.code == 0 and result.err == ""
    assert result.out.startswith("usage: nsysgen analyze") and "--nccl-tests-log" in result.out
    assert list(tmp_path.iterdir()) == []
    usage = run_cli("analyze")
    assert usage.code == 2 and "the following arguments are required: reports" in usage.err
