"""The typed config (nsysgen/model.py): a composed block becomes frozen objects with lists as
tuples, `auto` capture windows per workload kind, paths without trailing slashes, Blackwell
GPUs told by name, and settings read as the wrong plug-in's type refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import typed
from nsysgen.model import (
    AUTO_WINDOW_TRAINING,
    ScriptSettings,
    SourceSettings,
    TargetSettings,
    capture_from,
    settings_as,
    typed_block,
)
from nsysgen.profile.workloads.registry import WORKLOADS


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return Composer().compose([]).data


def test_typed_block_makes_tuples_and_lets_an_optional_key_be_missing() -> None:
    block = {"script": "/fsx/train.py", "args": ["--steps", "10"], "source": "train.py"}
    settings = typed_block(ScriptSettings, block)
    assert settings == ScriptSettings(
        source="train.py", loop_line=None, step_expr=None, script="/fsx/train.py",
        args=("--steps", "10"),
    )  # fmt: skip
    with pytest.raises(KeyError, match="script"):
        typed_block(ScriptSettings, {"args": []})  # not optional: a schema bug, not user input


def test_settings_read_as_another_plug_ins_type_are_refused() -> None:
    settings = SourceSettings(source=None, loop_line=None, step_expr=None)
    assert settings_as(settings, SourceSettings) is settings
    with pytest.raises(TypeError, match="^SourceSettings settings read as ScriptSettings$"):
        settings_as(settings, ScriptSettings)
    with pytest.raises(TypeError, match="read as TargetSettings"):
        settings_as(settings, TargetSettings)


def test_auto_windows_depend_on_the_workload_kind(data: dict[str, Any]) -> None:
    block = data["capture"]
    assert (block["delay"], block["duration"]) == ("auto", "auto")
    nccl = capture_from(block, WORKLOADS["nccl"].auto_window)
    assert (nccl.delay, nccl.duration, nccl.delay_s) == (2, 0, 2)
    training = capture_from(block, WORKLOADS["fsdp"].auto_window)
    assert (training.delay, training.duration) == AUTO_WINDOW_TRAINING == (30, 60)
    steps = capture_from({**block, "delay": None, "duration": 5})
    assert (steps.delay, steps.duration, steps.delay_s) == (None, 5, 0)


def test_capture_paths_and_lists(data: dict[str, Any]) -> None:
    block = {**data["capture"], "report_dir": "/fsx/r//", "ranks": "all", "recipes": ["a"]}
    capture = capture_from(block)
    assert capture.report_dir == "/fsx/r"
    assert capture.ranks == "all" and capture.recipes == ("a",)
    assert capture.trace == ("cuda", "nvtx") and capture.nccl_trace == ()
    assert capture_from({**block, "report_dir": "/"}).report_dir == "/"


@pytest.mark.parametrize(
    ("gpu", "blackwell"),
    [("B200", True), ("GB300", True), ("b100", True), ("H100", False), ("B40", False),
     ("GB2000", False)],
)  # fmt: skip
def test_blackwell_is_told_by_the_gpu_name(data: dict[str, Any], gpu: str, blackwell: bool) -> None:
    changed = copy.deepcopy(data)
    changed["cluster"]["gpu_model"] = gpu
    changed["cluster"]["nsight_root"] += "/"
    config = typed(changed)
    assert config.cluster.blackwell is blackwell
    assert config.nsys_path == "/fsx/nsight-systems/2025.3.1/target-linux-x64/nsys"
    assert config.importer_path == "/fsx/nsight-systems/2025.3.1/host-linux-x64/QdstrmImporter"
    assert config.cluster.world_size == config.cluster.nodes * config.cluster.gpus_per_node
