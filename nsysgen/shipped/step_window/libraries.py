"""The libraries that own a training loop, and where each keeps the step number it logs."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from typing import Any


class Library:
    """A library that owns the training loop, and the step number its logs give an optimizer
    step: read from the library's object on the stack while the optimizer steps."""

    __slots__ = ("name", "modules", "cls", "path", "offset")

    def __init__(
        self, name: str, modules: tuple[str, ...], cls: str, path: tuple[str, ...], offset: int
    ) -> None:
        self.name, self.modules, self.cls, self.path, self.offset = name, modules, cls, path, offset

    @property
    def counter(self) -> str:
        """The counter in words, as the helper, plan and verify say it."""
        value = ".".join(self.path) + (f" + {self.offset}" if self.offset else "")
        return f"{value} ({self.name})"

    def owns(self, obj: object) -> bool:
        return any(
            c.__name__ == self.cls and c.__module__.startswith(self.modules)
            for c in type(obj).__mro__
        )

    def read(self, obj: object) -> int:
        value: Any = obj
        for name in self.path:
            value = getattr(value, name)
        return int(value) + self.offset


# In the order they are preferred when several are on the stack (the Trainer of transformers
# may drive a DeepSpeed engine: its own log numbers the steps). Each library's step semantics,
# from its code: transformers' Trainer increments state.global_step right after the optimizer
# steps and logs that value; Lightning's loggers number a step by the fit loop's count of
# batches that stepped (its trainer.global_step counts optimizer steps: two a batch for a GAN
# with manual optimization), incremented after the batch; DeepSpeed's engine increments
# global_steps after the optimizer step and prints that value.
LIBRARIES = (
    Library("transformers Trainer", ("transformers.",), "Trainer", ("state", "global_step"), 1),
    Library(
        "Lightning Trainer",
        ("lightning.pytorch.", "pytorch_lightning."),
        "Trainer",
        ("fit_loop", "epoch_loop", "_batches_that_stepped"),
        0,
    ),
    Library("DeepSpeed engine", ("deepspeed.",), "DeepSpeedEngine", ("global_steps",), 1),
    # PyTorch-Ignite increments engine.state.iteration before it runs the step (1-based), and
    # its handlers log that value.
    Library("Ignite Engine", ("ignite.",), "Engine", ("state", "iteration"), 0),
)
