"""torch.optim.optimizer of the stand-in: the global step hooks, run around every subclass's
step() as torch's Optimizer does."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Hook = Callable[[Any, tuple[Any, ...], dict[str, Any]], None]
_pre_hooks: list[Hook] = []
_post_hooks: list[Hook] = []


def register_optimizer_step_pre_hook(hook: Hook) -> None:
    _pre_hooks.append(hook)


def register_optimizer_step_post_hook(hook: Hook) -> None:
    _post_hooks.append(hook)


def _hooked(step: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(step)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        for hook in list(_pre_hooks):
            hook(self, args, kwargs)
        result = step(self, *args, **kwargs)
        for hook in list(_post_hooks):
            hook(self, args, kwargs)
        return result

    return run


class Optimizer:
    counts_steps = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in vars(cls):
            cls.step = _hooked(vars(cls)["step"])  # type: ignore[method-assign]

    def __init__(self, params: Any = (), *args: object, **kwargs: object) -> None:
        self.param_groups = [{"params": list(params)}]
        self.state: dict[Any, dict[str, int]] = {}

    def step(self, closure: object = None, fail: bool = False) -> None:
        import torch  # the stand-in's event log (imported here: torch imports this module)

        if fail:
            raise MemoryError("CUDA out of memory (stand-in)")
        if callable(closure):
            closure()  # as LBFGS and Lightning's automatic optimization: forward and backward
        torch._event("optimizer.step")
        if self.counts_steps:
            for param in self.param_groups[0]["params"]:
                self.state.setdefault(param, {"step": 0})["step"] += 1

    def zero_grad(self, set_to_none: bool = True) -> None:
        pass

    def state_dict(self) -> dict[str, int]:
        return {"step": max((s["step"] for s in self.state.values()), default=0)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        for param in self.param_groups[0]["params"]:
            self.state[param] = {"step": state["step"]}


Optimizer.step = _hooked(Optimizer.step)  # type: ignore[method-assign]


class SGD(Optimizer):
    pass


class Adam(Optimizer):
    counts_steps = True


class AdamW(Adam):
    pass
