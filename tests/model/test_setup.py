"""The setup a config resolves to (nsysgen/model/setup.py), decided once when it is typed: the
launch shape and its unit, the step method (the workload's default for auto), whether CUDA is
traced, and the window's defaults."""

from __future__ import annotations

import pytest

from nsysgen.model.setup import Setup, traces_cuda
from tests.profile.configs import config


@pytest.mark.parametrize(
    ("overrides", "per_gpu", "tasks", "unit"),
    [
        (("workload=fsdp",), False, 1, "node"),
        (("workload=nccl",), True, 8, "rank"),
        (("workload=fsdp", "workload.launch=per_gpu"), True, 8, "rank"),
    ],
)
def test_the_launch_shape_and_its_unit(
    overrides: tuple[str, ...], per_gpu: bool, tasks: int, unit: str
) -> None:
    setup = config(*overrides).setup
    assert (setup.per_gpu, setup.tasks_per_node, setup.unit) == (per_gpu, tasks, unit)


@pytest.mark.parametrize(
    ("overrides", "method", "window"),
    [
        (("workload=python", "capture=steps"), "hook", (10, 14)),
        (("workload=python", "capture=steps", "capture.step_method=patch"), "patch", (10, 14)),
        (("workload=megatron", "capture=steps"), "native", (10, 14)),
        (("workload=nccl", "capture=steps"), None, (10, 14)),  # no steps to record
        (("workload=python",), None, (0, 0)),  # a window by time: no steps, bounds 0
    ],
)
def test_the_step_method_and_the_window(
    overrides: tuple[str, ...], method: str | None, window: tuple[int, int]
) -> None:
    setup = config(*overrides).setup
    assert (setup.step_method, (setup.first_step, setup.last_step)) == (method, window)
    assert setup.hooks is (method == "hook")
    assert setup.marks_steps is (method in ("hook", "patch"))


def test_cuda_traced_by_any_of_its_values() -> None:
    assert all(traces_cuda((value,)) for value in ("cuda", "cuda-sw", "cuda-hw"))
    assert not traces_cuda(("nvtx", "osrt", "cudnn", "cublas"))
    assert config("capture.trace=[nvtx,osrt]").setup.traces_cuda is False
    assert config().setup.traces_cuda is True


def test_it_is_frozen() -> None:
    setup = config().setup
    assert isinstance(setup, Setup)
    with pytest.raises(AttributeError):
        setup.per_gpu = not setup.per_gpu  # type: ignore[misc]
