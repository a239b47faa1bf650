"""The setup a config resolves to: the facts it implies, decided once when the config is typed
(nsysgen.model.from_dict) and read from `Config.setup` by the checks, lints, plan, targets and
the step helper's contract, which derive none of them again (tests/test_layers.py holds them to
it).

- The launch: one task per GPU (each task a global rank) or one launcher per node (a task is a
  node's torchrun), how many tasks a node runs, and what a task is called in messages.
- How capture=steps records the steps: the workload's default method where `auto`.
- Whether CUDA is traced (any of nsys's CUDA trace values).
- The step window, 0 where a bound is unset (only capture=steps sets them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# nsys --trace values that trace CUDA (software, hardware, or nsys's choice).
CUDA_VALUES = ("cuda", "cuda-sw", "cuda-hw")


@dataclass(frozen=True)
class Setup:
    per_gpu: bool  # workload.launch=per_gpu
    gpus_per_node: int
    step_method: str | None  # hook, patch or native for capture=steps; None otherwise
    traces_cuda: bool  # capture.trace holds a CUDA value
    first_step: int  # capture.first_step, 0 where unset
    last_step: int  # capture.last_step, 0 where unset
    pytorch_job: bool = False  # the workload runs one torchrun per node (a PyTorchJob's pods)

    @property
    def tasks_per_node(self) -> int:
        """srun's tasks on a node (pods' processes): one per GPU, or one launcher per node."""
        return self.gpus_per_node if self.per_gpu else 1

    @property
    def unit(self) -> str:
        """What one task is, in messages: a rank, or a node (its torchrun holds every rank)."""
        return "rank" if self.per_gpu else "node"

    @property
    def hooks(self) -> bool:
        """The zero-patch helper is on the program's PYTHONPATH (step_method=hook)."""
        return self.step_method == "hook"

    @property
    def marks_steps(self) -> bool:
        """nsysgen's step helper runs in the program and marks each optimizer step."""
        return self.step_method in ("hook", "patch")


def traces_cuda(trace: tuple[str, ...]) -> bool:
    return any(value in CUDA_VALUES for value in trace)


class _Capture(Protocol):
    """What resolving reads of nsysgen.model.Capture (this module sits below the model)."""

    @property
    def mode(self) -> str: ...
    @property
    def step_method(self) -> str | None: ...
    @property
    def trace(self) -> tuple[str, ...]: ...
    @property
    def first_step(self) -> int | None: ...
    @property
    def last_step(self) -> int | None: ...


def resolve(
    launch: str,
    gpus_per_node: int,
    capture: _Capture,
    step_methods: tuple[str, ...],
    pytorch_job: bool = False,
) -> Setup:
    """`step_methods`: the workload's capture.step_method values, its default first;
    `pytorch_job`: its program is one torchrun per node (the plug-in's say)."""
    method = None
    if capture.mode == "steps":
        chosen = capture.step_method or "auto"
        method = (step_methods[0] if step_methods else None) if chosen == "auto" else chosen
    return Setup(
        per_gpu=launch == "per_gpu",
        gpus_per_node=gpus_per_node,
        step_method=method,
        traces_cuda=traces_cuda(capture.trace),
        first_step=capture.first_step or 0,
        last_step=capture.last_step or 0,
        pytorch_job=pytorch_job,
    )
