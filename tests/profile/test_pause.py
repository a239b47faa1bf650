"""The pause at a capture window's edges (issue 31): the model `plan` uses is the fit of the
committed H200 measurements, `plan` shows it, and NSG023 weighs it against the collective
timeout read from the workload."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from nsysgen.profile import pause
from tests.conftest import REPO, RunCli

RESULTS = REPO / "bench" / "gpu" / "results"


Run = tuple[str, str, float, float, float, float]


def _runs(*names: str) -> list[Run]:
    """(trace options, loop, window s, report MB, pause at open s, pause at close s) of every
    run measured in the named result files."""
    runs = []
    for name in names:
        for line in (RESULTS / f"pause31-2026-12-02-{name}.jsonl").read_text().splitlines():
            run = json.loads(line)
            steps = run["steps"]
            base = statistics.median(s["ms"] for s in steps if s["state"] == "before")
            edge = {s["edge"]: s["ms"] - base for s in steps if s["edge"]}
            runs.append(
                (
                    run.get("variant", "base"),
                    run["mode"],
                    run["window_s"],
                    run["report_bytes"] / 1e6,
                    edge["open"] / 1e3,
                    edge["close"] / 1e3,
                )
            )
    return runs


DEFAULT = ("launch", "compute", "launch-large")  # the switches nsysgen generates by default


def _line(mb: float) -> float:
    return pause.CLOSE_BASE_S + pause.CLOSE_S_PER_MB * mb


def test_the_model_is_the_fit_of_the_measurements() -> None:
    runs = _runs(*DEFAULT)
    # 2 loops x 4 windows x 3 runs, and the launch loop's 60 s (3 runs) and 100 s (2) windows
    assert len(runs) == 29 and max(r[3] for r in runs) > 300  # "several hundred MB"
    mbs, closes = [r[3] for r in runs], [r[5] for r in runs]
    slope, intercept = statistics.linear_regression(mbs, closes)
    assert (round(intercept, 2), round(slope, 3)) == (pause.CLOSE_BASE_S, pause.CLOSE_S_PER_MB)
    errors = [abs(_line(r[3]) - r[5]) / r[5] for r in runs]
    assert max(errors) < 0.17 + 0.005  # the basis says "largest error 17 %"


def _default_mb() -> dict[tuple[str, float], float]:
    """The median report MB the default switches recorded, per loop and window."""
    sizes: dict[tuple[str, float], list[float]] = {}
    for _, loop, window, mb, _, _ in _runs(*DEFAULT):
        sizes.setdefault((loop, window), []).append(mb)
    return {key: statistics.median(values) for key, values in sizes.items()}


def test_what_the_trace_options_add_is_measured() -> None:
    runs, default_mb = _runs("options"), _default_mb()
    assert len(runs) == 26  # the basis says "26 more runs"
    for option, extra in pause.CLOSE_EXTRA_S.items():
        mine = [r for r in runs if r[0] == option]
        over = [close - _line(default_mb[loop, window]) for _, loop, window, _, _, close in mine]
        assert round(statistics.median(over), 1) == extra
        predicted = [_line(default_mb[r[1], r[2]]) + extra for r in mine]
        errors = [abs(p - r[5]) / r[5] for p, r in zip(predicted, mine, strict=True)]
        assert max(errors) < 0.18 + 0.005  # the basis says "18 % with osrt or sampling"
    without_metrics = [r for r in (*_runs(*DEFAULT), *runs) if r[0] != "gpu-metrics"]
    assert round(max(r[4] for r in without_metrics), 2) == pause.OPEN_S
    metrics = [r for r in runs if r[0] == "gpu-metrics"]
    assert round(max(r[4] for r in metrics), 2) == pause.OPEN_GPU_METRICS_S
    # GPU metrics add nothing to the close: the line at the default switches' report size is
    # never short by more than its own error.
    assert all(_line(default_mb[r[1], r[2]]) / r[5] - 1 > -0.17 for r in metrics)


def _plan(run_cli: RunCli, *overrides: str) -> dict[str, Any]:
    data = json.loads(run_cli("plan", "--json", *overrides).out)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    ("overrides", "opens", "closes"),
    [
        (("workload=fsdp",), True, True),  # a window from 30 s for 60 s
        (("workload=fsdp", "capture=steps"), True, True),
        (("workload=nccl", "capture.delay=0"), False, False),  # the whole program
    ],
)
def test_plan_shows_the_pause_where_the_capture_opens_or_closes_in_the_run(
    run_cli: RunCli, overrides: tuple[str, ...], opens: bool, closes: bool
) -> None:
    expected = _plan(run_cli, *overrides)["pause_at_window_edges"]
    assert (expected["open_s"] is not None, expected["close_s"] is not None) == (opens, closes)
    assert expected["basis"] == pause.BASIS
    text = " ".join(run_cli("plan", *overrides).out.split())
    assert "pause " in text and (("when it closes" in text) is closes)


def test_the_timeout_comes_from_the_workload_or_torchs_default(run_cli: RunCli) -> None:
    default = _plan(run_cli, "workload=megatron")["pause_at_window_edges"]
    assert (default["timeout_s"], default["timeout_source"]) == (
        600,
        "torch's default for NCCL process groups",
    )
    args = "workload.megatron.args=[--distributed-timeout-minutes,'60']"
    raised = _plan(run_cli, "workload=megatron", args)["pause_at_window_edges"]
    assert raised["timeout_s"] == 3600
    assert raised["timeout_source"] == "--distributed-timeout-minutes 60"


def test_nsg023_names_the_remedies_and_a_raised_timeout_silences_it(run_cli: RunCli) -> None:
    long = ("workload=fsdp", "capture.duration=600")
    found = [f for f in _plan(run_cli, *long)["lints"] if f["id"] == "NSG023"]
    assert len(found) == 1 and "600 s" in found[0]["message"]
    for remedy in ("shorten the window", "record fewer ranks", "trace less", "raise the timeout"):
        assert remedy in found[0]["fix"]
    script_args = "workload.fsdp.args=['--distributed-timeout-minutes=30']"
    quiet = _plan(run_cli, *long, script_args)["lints"]
    assert "NSG023" not in [f["id"] for f in quiet]


@pytest.mark.parametrize(
    ("overrides", "opened", "closed", "open_s", "extra_s"),
    [
        ((), (), (), pause.OPEN_S, 0.0),
        (("capture.trace=[cuda,nvtx,osrt]",), (), ("osrt",), pause.OPEN_S, 3.6),
        (("capture.sample=process-tree",), (), ("sampling",), pause.OPEN_S, 3.4),
        (("capture.cpuctxsw=system-wide",), (), ("sampling",), pause.OPEN_S, 3.4),
        (
            ("capture.trace=[cuda,nvtx,osrt]", "capture.sample=system-wide"),
            (),
            ("osrt", "sampling"),
            pause.OPEN_S,
            7.0,
        ),
        (("capture.gpu_metrics=true",), ("gpu-metrics",), (), pause.OPEN_GPU_METRICS_S, 0.0),
        (
            ("capture.extra_args=['--gpu-metrics-devices=0']",),
            ("gpu-metrics",),
            (),
            pause.OPEN_GPU_METRICS_S,
            0.0,
        ),
    ],
)
def test_plan_adds_what_the_trace_options_cost(
    run_cli: RunCli,
    overrides: tuple[str, ...],
    opened: tuple[str, ...],
    closed: tuple[str, ...],
    open_s: float,
    extra_s: float,
) -> None:
    data = _plan(run_cli, "workload=fsdp", *overrides)
    expected = data["pause_at_window_edges"]
    assert (tuple(expected["open_options"]), tuple(expected["close_options"])) == (opened, closed)
    assert expected["open_s"] == open_s
    assert expected["close_s"] == round(_line(data["bytes_per_report"] / 1e6) + extra_s, 1)
    text = " ".join(run_cli("plan", "workload=fsdp", *overrides).out.split())
    assert f"when the window opens{pause.with_options(opened)} and" in text
    assert f"when it closes{pause.with_options(closed)}, on each" in text


def test_nsg023_counts_the_trace_options(run_cli: RunCli) -> None:
    # A window whose default-switch close sits just under half the timeout: osrt tips it over.
    base = ("workload=fsdp", "capture.duration=331")
    plain = _plan(run_cli, *base)
    assert 300 - 3.6 < plain["pause_at_window_edges"]["close_s"] <= 300
    assert "NSG023" not in [f["id"] for f in plain["lints"]]
    osrt = _plan(run_cli, *base, "capture.trace=[cuda,nvtx,osrt]")
    found = [f for f in osrt["lints"] if f["id"] == "NSG023"]
    assert len(found) == 1 and " (with osrt) (~" in found[0]["message"]


MEGATRON_LONG = ("workload=megatron", "capture.duration=300", "job.time_limit_min=600")


def _timeout(run_cli: RunCli, *overrides: str) -> tuple[int | None, str]:
    expected = _plan(run_cli, *overrides)["pause_at_window_edges"]
    return expected["timeout_s"], expected["timeout_source"]


def test_the_last_timeout_argument_wins_as_in_argparse(run_cli: RunCli) -> None:
    args = (
        "workload.megatron.args=['--distributed-timeout-minutes=30',"
        "'--distributed-timeout-minutes=1']"
    )
    assert _timeout(run_cli, *MEGATRON_LONG, args) == (60, "--distributed-timeout-minutes 1")
    lints = _plan(run_cli, *MEGATRON_LONG, args)["lints"]
    assert "NSG023" in [f["id"] for f in lints]  # a 36 s close against 60 s


def test_a_commands_own_arguments_are_read(run_cli: RunCli) -> None:
    argv = (
        "workload.command.argv=[torchrun,'--nproc_per_node=8',/fsx/pretrain_gpt.py,"
        "--distributed-timeout-minutes,'5']"
    )
    assert _timeout(run_cli, "workload=command", argv) == (300, "--distributed-timeout-minutes 5")


def test_a_timeout_set_in_code_is_stated_in_the_config(run_cli: RunCli) -> None:
    stated = "workload.collective_timeout_s=3600"
    assert _timeout(run_cli, "workload=fsdp", stated) == (3600, "workload.collective_timeout_s")
    long = ("workload=fsdp", "capture.duration=600")
    assert "NSG023" in [f["id"] for f in _plan(run_cli, *long)["lints"]]
    assert "NSG023" not in [f["id"] for f in _plan(run_cli, *long, stated)["lints"]]


def test_nccl_tests_have_no_collective_timeout(run_cli: RunCli) -> None:
    timeout, source = _timeout(run_cli, "workload=nccl", "capture.delay=5", "capture.duration=900")
    assert timeout is None and "nccl-tests have none" in source
    lints = _plan(run_cli, "workload=nccl", "capture.delay=5", "capture.duration=900")["lints"]
    assert "NSG023" not in [f["id"] for f in lints]


@pytest.mark.parametrize(
    "value", ["'--distributed-timeout-minutes=1.5'", "--distributed-timeout-minutes,abc"]
)
def test_a_timeout_that_is_not_whole_minutes_is_refused(
    run_cli: RunCli, tmp_path: Path, value: str
) -> None:
    result = run_cli(
        "workload=megatron", f"workload.megatron.args=[{value}]", f"output_dir={tmp_path}"
    )
    assert result.code == 2
    assert "workload.megatron.args: --distributed-timeout-minutes" in result.err
    assert "workload.collective_timeout_s" in result.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("value", "seconds"), [("'+30'", 1800), ("' 5'", 300), ("'1_0'", 600)])
def test_the_timeout_is_read_as_argparse_reads_an_int(
    run_cli: RunCli, value: str, seconds: int
) -> None:
    args = f"workload.megatron.args=[--distributed-timeout-minutes,{value}]"
    assert _timeout(run_cli, "workload=megatron", args)[0] == seconds


@pytest.mark.parametrize("value", ["'²'", "'0'", "'-5'"])
def test_a_timeout_argparse_would_not_read_as_minutes_is_refused(
    run_cli: RunCli, value: str
) -> None:
    result = run_cli(
        "plan",
        "workload=megatron",
        f"workload.megatron.args=[--distributed-timeout-minutes,{value}]",
    )
    assert result.code == 2, result.err
    assert "is not a whole number of minutes (at least 1)" in result.err
    assert "internal error" not in result.err
