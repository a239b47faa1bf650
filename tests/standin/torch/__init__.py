"""A stand-in for torch that prints what a patched training script asks of it, one event a
line (`@@ start`, `@@ push step 3`, `@@ backward`, `@@ optimizer.step`, ...), for
tests/test_patch_behaviour.py."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any


def _event(*words: object) -> None:
    print("@@", *words, flush=True)


class _Loss:
    def backward(self) -> None:
        _event("backward")

    def item(self) -> float:
        return 0.0

    def __truediv__(self, other: object) -> _Loss:
        return self


class _Module:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __call__(self, *args: object, **kwargs: object) -> _Loss:
        return _Loss()

    def parameters(self) -> Iterator[object]:
        return iter(())

    def train(self) -> None:
        pass

    def eval(self) -> None:
        pass


class _Optimizer:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def step(self) -> None:
        _event("optimizer.step")

    def zero_grad(self, set_to_none: bool = True) -> None:
        pass


class _Cudart:
    def cudaProfilerStart(self) -> None:  # noqa: N802 - torch's name
        _event("start")

    def cudaProfilerStop(self) -> None:  # noqa: N802 - torch's name
        _event("stop")


def _push(label: str) -> None:
    _event("push", label)


def _pop() -> None:
    _event("pop")


cuda: Any = SimpleNamespace(
    synchronize=lambda: None,
    cudart=_Cudart,
    nvtx=SimpleNamespace(range_push=_push, range_pop=_pop),
)
nn: Any = SimpleNamespace(Linear=_Module)
optim: Any = SimpleNamespace(SGD=_Optimizer, AdamW=_Optimizer)
