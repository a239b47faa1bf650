"""Compiling one config or a sweep (nsysgen/drivers/build.py), its units called directly: the sweep
root's name merged from its points' job names, the natural order and text of the sweep index,
the checks on an index read back, and the message of a sweep with invalid points.
tests/config/test_sweep.py compiles whole sweeps through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nsysgen import __version__
from nsysgen.drivers.build import (
    InvalidSweep,
    merged_name,
    natural_key,
    read_sweep_index,
    sweep_index_text,
)
from nsysgen.errors import InvalidConfig, Issue
from nsysgen.output.manifest import TamperedFile


@pytest.mark.parametrize(
    ("names", "merged"),
    [
        ([], "sweep"),
        (["a", "a"], "a"),
        (["nccl-p4de-slurm", "nccl-p5-slurm"], "nccl-p4de+p5-slurm"),
        (["x-a", "y-a"], "x+y-a"),
        (["fsdp", "nccl", "fsdp"], "fsdp+nccl"),
        (["a-b", "a-b-c"], "a-b+b-c"),  # every name keeps a part of its own
    ],
)
def test_merged_name_keeps_the_common_head_and_tail(names: list[str], merged: str) -> None:
    assert merged_name(names) == merged


def test_natural_key_orders_numbers_by_value() -> None:
    names = ["delay-120", "delay-30", "b", "delay-5"]
    assert sorted(names, key=natural_key) == ["b", "delay-5", "delay-30", "delay-120"]


def test_the_index_lists_points_in_natural_order_without_output_dir(tmp_path: Path) -> None:
    text = sweep_index_text(
        "nsysgen -m x=2,10", ["x=2,10", "output_dir=/tmp/o"], {"x-10": ["x=10"], "x-2": ["x=2"]}
    )
    assert json.loads(text) == {
        "args": ["x=2,10"],
        "command": "nsysgen -m x=2,10",
        "complete": True,
        "generated_by": f"nsysgen {__version__}",
        "points": [{"name": "x-2", "overrides": ["x=2"]}, {"name": "x-10", "overrides": ["x=10"]}],
    }
    path = tmp_path / "nsysgen-sweep.json"
    path.write_text(text)
    assert read_sweep_index(path)["points"] == {"x-2": ["x=2"], "x-10": ["x=10"]}


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ([{"name": "../up", "overrides": []}], "its points are not folder names of this sweep"),
        ([{"name": "a/b", "overrides": []}], "its points are not folder names of this sweep"),
        ([{"name": "a"}], "its points are not folder names of this sweep"),
        ({"a": "x=1"}, "its points are not folder names of this sweep"),
        ({"a": ["x=1"]}, "not an nsysgen sweep index (no command)"),
    ],
)
def test_a_tampered_index_is_refused(tmp_path: Path, points: object, message: str) -> None:
    path = tmp_path / "nsysgen-sweep.json"
    path.write_text(json.dumps({"points": points}))
    with pytest.raises(TamperedFile, match=f"^{re.escape(f'{path}: {message}')}"):
        read_sweep_index(path)


def test_an_invalid_sweep_lists_each_points_issues() -> None:
    error = InvalidSweep([("d-1", InvalidConfig([Issue("c", "d"), Issue("a", "b")]))], 3)
    assert error.user_message() == (
        "error: 1 of 3 sweep points are invalid; nothing was written\npoint d-1:\n  a: b\n  c: d"
    )


def test_a_point_job_name_is_one_every_target_accepts() -> None:
    """Kubernetes job names are DNS-1035 labels: a sweep point's job name holds no `_` or `.`
    (an EKS sweep was refused at every point: "'fsdp-p5-eks_first-step-10' is not a TrainJob
    name")."""
    from nsysgen.drivers.build import point_job_name

    assert point_job_name("fsdp-p5-eks", "first-step-10") == "fsdp-p5-eks-first-step-10"
    assert point_job_name("j", "delay-1.5_duration-30") == "j-delay-1-5-duration-30"
    assert point_job_name("j", "Nodes-2__x") == "j-nodes-2-x"
