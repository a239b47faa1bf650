"""What the process says: rank variables, torch (imported once the program has), its autograd
and CUDA-graph state, an optimizer's own step count."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import ModuleType
    from typing import Any


def _number(env: Mapping[str, str], *names: str) -> int:
    # Launchers leave rank variables empty or unset; neither may stop the training.
    for name in names:
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def _torch() -> ModuleType:
    return sys.modules["torch"] if "torch" in sys.modules else __import__("torch")


def _in_backward(torch: Any) -> bool:
    current = getattr(getattr(torch, "_C", None), "_current_graph_task_id", None)
    return current is not None and current() != -1


def _capturing(torch: Any) -> bool:
    cuda = getattr(torch, "cuda", None)
    started = getattr(cuda, "is_initialized", None)
    capturing = getattr(cuda, "is_current_stream_capturing", None)
    if started is None or capturing is None or not started():
        return False
    try:
        return bool(capturing())
    except RuntimeError:  # a torch built without CUDA: nothing is ever captured
        return False


def _state_step(optimizer: Any) -> int | None:
    # Adam, AdamW and fused variants count steps per parameter (or per group); the count
    # before this step is the number of steps taken, restored by load_state_dict.
    try:
        for group in optimizer.param_groups:
            if "step" in group and group["step"] is not None:
                return int(group["step"])
            for param in group["params"]:
                state = optimizer.state.get(param)
                if state and "step" in state:
                    return int(state["step"])
                return None
    except (AttributeError, KeyError, TypeError, ValueError, RuntimeError):
        return None
    return None


def _trains() -> bool:
    # A launcher (torchrun's agent, deepspeed's) imports torch but never starts CUDA.
    started = getattr(getattr(_torch(), "cuda", None), "is_initialized", None)
    return started is None or bool(started())
