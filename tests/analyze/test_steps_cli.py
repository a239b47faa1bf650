"""The per rank x step options of `nsysgen analyze` (nsysgen/analyze/steps_cli.py): the number
type of its thresholds, the reduction's Options built from the parsed arguments (nccl-tests'
figures flattened by size, the fabric from --cluster or from the contract beside the reports),
and the checks that run before anything is written."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from nsysgen.analyze import steps_cli
from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.reduce import Options
from tests.conftest import REPO

CONTRACT = REPO / "tests" / "golden" / "default" / "out" / "nccl-p5-slurm" / "nsysgen-expect.json"


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("reports", type=Path)
    steps_cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_thresholds_take_non_negative_numbers() -> None:
    assert steps_cli._positive("2.5") == 2.5
    assert steps_cli._positive("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match=r"^not a number: 'ten'$"):
        steps_cli._positive("ten")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be >= 0: '-1'$"):
        steps_cli._positive("-1")
    for text in ("nan", "inf", "-inf"):  # nan turned the regression gate off, exit 0
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a finite number >= 0"):
            steps_cli._positive(text)
    args = parse("r")
    assert (args.regression_threshold, args.regression_min_ms) == (10.0, 0.1)
    assert (args.straggler_min_ms, args.straggler_min_percent) == (1.0, 25.0)
    assert (args.baseline, args.world_size, args.cluster) == (None, None, None)


def test_options_from_the_arguments(tmp_path: Path) -> None:
    flags = "--straggler-min-ms 3 --straggler-min-percent 10 --world-size 16 --cluster p5"
    args = parse(str(tmp_path), *flags.split(), "--regression-threshold", "7")
    reference = {1 << 20: (14.0, 74.9), 1024: (14.2, None)}
    options = steps_cli.options(args, reference, "job x, run 1, 2 report(s)")
    assert options == Options(
        straggler_min_ms=3.0,
        straggler_min_percent=10.0,
        world_size=16,
        regression_threshold=7.0,
        reference=((1024, 14.2, None), (1 << 20, 14.0, 74.9)),  # by size
        label="job x, run 1, 2 report(s)",
        fabric={
            "source": "--cluster p5",
            "gpus_per_node": 8,
            "nodes": 2,
            "nvlink_GBps": 450.0,
            "efa_Gbps": 3200.0,
        },
    )


def test_the_fabric_comes_from_the_contract_beside_the_reports_unless_named(
    tmp_path: Path,
) -> None:
    reports = tmp_path / "reports" / "job12"
    reports.mkdir(parents=True)
    assert steps_cli.options(parse(str(reports)), {}).fabric is None
    shutil.copy(CONTRACT, tmp_path / "reports" / "nsysgen-expect.json")  # the report folder's
    found = steps_cli.options(parse(str(reports)), {}).fabric
    assert found == {
        "source": str(tmp_path / "reports" / "nsysgen-expect.json"),
        "gpus_per_node": 8,
        "nodes": 2,
        "nvlink_GBps": 450,
        "efa_Gbps": 3200,
    }
    named = steps_cli.options(parse(str(reports), "--cluster", "p4de"), {}).fabric
    assert named is not None and named["source"] == "--cluster p4de"


def test_inputs_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    steps_cli.check_arguments(parse("r", "--world-size", "1", "--cluster", "p5"))
    (tmp_path / "summary.json").write_text('{"schema": "nsysgen-analyze-summary/1"}')
    steps_cli.check_arguments(parse("r", "--baseline", str(tmp_path)))
    with pytest.raises(AnalyzeError, match=r"^--baseline .*: no summary.json there$"):
        steps_cli.check_arguments(parse("r", "--baseline", str(tmp_path / "nowhere")))
    with pytest.raises(AnalyzeError, match=r"^--world-size -3: must be at least 1$"):
        steps_cli.check_arguments(parse("r", "--world-size", "-3"))
    (tmp_path / "odd.yaml").write_text("gpus_per_node: 8\n")
    with pytest.raises(AnalyzeError, match=r": no network block \(network.nvlink_GBps"):
        steps_cli.check_arguments(parse("r", "--cluster", str(tmp_path / "odd.yaml")))
