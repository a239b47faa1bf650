"""The optimizer steps: hooked in torch, read before the window, marked inside it."""

from __future__ import annotations

import sys

from nsysgen.shipped.step_window.names import OPTIMIZER_MARK
from nsysgen.shipped.step_window.probes import _capturing, _in_backward, _state_step, _torch
from nsysgen.shipped.step_window.steps import WindowSteps

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class OptimizerHooks(WindowSteps):
    """torch's global optimizer step hooks (and GradScaler's skipped steps): each optimizer
    step is read, marked, and ends a training step when its cycle is done."""

    def install(self) -> None:
        """Hook every optimizer of the process (once torch is imported)."""
        if not self.active or self.installed:
            return
        self.installed = True
        try:
            self._install()
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _install(self) -> None:
        torch = _torch()
        __import__("torch.optim.optimizer")
        # torch.optim deletes its `optimizer` attribute: the module is found in sys.modules.
        optimizer_module: Any = sys.modules["torch.optim.optimizer"]
        if not hasattr(optimizer_module, "register_optimizer_step_post_hook"):
            self._refuse(
                f"torch {getattr(torch, '__version__', '?')} has no global optimizer step hooks "
                "(torch >= 2.0): nothing is recorded"
            )
            return
        owner = getattr(optimizer_module, "_nsysgen_window", None)
        if owner is not None:
            self.owner = owner  # a patched script's own copy of the helper hooked torch first
            return
        optimizer_module._nsysgen_window = self
        optimizer_module.register_optimizer_step_pre_hook(self._pre)
        optimizer_module.register_optimizer_step_post_hook(self._post)
        # GradScaler.step skips optimizer.step() on inf/nan gradients: no hook fires, but the
        # iteration is over. Seen from here, the step ends anyway, marked "skipped".
        amp = getattr(torch, "amp", None)
        cuda_amp = getattr(getattr(torch, "cuda", None), "amp", None)
        for scaler in (getattr(amp, "GradScaler", None), getattr(cuda_amp, "GradScaler", None)):
            if scaler is not None and "step" in vars(scaler):
                scaler.step = self._scaler_step(scaler.step)
        self.printed.install(torch)
        import atexit

        atexit.register(self._at_exit)

    def _scaler_step(self, step: Callable[..., Any]) -> Callable[..., Any]:
        window = self

        def scaler_step(scaler: object, optimizer: object, *args: Any, **kwargs: Any) -> Any:
            seen = window.seen
            result = step(scaler, optimizer, *args, **kwargs)
            if window.active and window.seen == seen and window.depth == 0:
                window._pre(optimizer, args, kwargs)
                window._post(optimizer, args, kwargs, skipped=True)
            return result

        return scaler_step

    def _pre(self, optimizer: object, args: object, kwargs: object) -> None:
        try:
            self._pre_step(optimizer)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _post(self, optimizer: object, args: object, kwargs: object, skipped: bool = False) -> None:
        try:
            self._post_step(optimizer, skipped)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _pre_step(self, optimizer: object) -> None:
        if self.depth and optimizer is self.outer:
            self.depth = 0  # its last step raised (an OOM the script caught): no post hook ran
        self.depth += 1
        if self.depth > 1 or not self.active or self.done:
            return
        self.outer = optimizer
        self.seen += 1
        torch = _torch()
        if _in_backward(torch):
            self._refuse(
                "an optimizer steps inside backward (optimizer-in-backward): its steps cannot "
                "be told apart from gradient hooks; nothing is recorded (use capture=window or "
                "capture=nvtx for this script)"
            )
            return
        if _capturing(torch):
            self._refuse(
                "an optimizer step is being captured into a CUDA graph (torch.cuda.graph): its "
                "replays run no optimizer step in Python, so the helper cannot see steps; "
                "nothing is recorded (use capture=window or capture=nvtx for this script)"
            )
            return
        frame = sys._getframe(1)
        numbering = self.numbering
        if not self.locked:
            if numbering.base is None:
                numbering.base = _state_step(optimizer) or 0
            self.readings = tuple(counter.read(frame) for counter in numbering.counters)
        elif self.recording:
            index = numbering.chosen()
            self.reading = None if index is None else numbering.counters[index].read(frame)

    def _post_step(self, optimizer: object, skipped: bool) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth or not self.active or self.done:
            return
        index = self.optimizers.setdefault(id(optimizer), len(self.optimizers))
        self.printed.stepped()
        if self.recording:
            self._mark(optimizer, index, skipped)
        if not self.locked:
            # Every optimizer step counts while the cycle of optimizers is learned: one that
            # ends a step early under a cycle not known yet is still the loop's.
            if self.numbering.add(index, self.readings):
                self._ended_before_window()
            return
        if self.patched and not self.under_way:
            return  # outside the patched loop (an evaluation or warm-up step, say)
        self.taken += 1
        if self.taken >= (self.numbering.per_step or 1):
            self._end()

    def _mark(self, optimizer: object, index: int, skipped: bool) -> None:
        number = self.step if self.step is not None else self.numbering.number_of_last()
        label = f"{OPTIMIZER_MARK} {number} {type(optimizer).__name__}#{index}"
        label += " skipped" if skipped else ""
        chosen = self.numbering.chosen()
        if chosen is not None and self.reading is not None:
            label += f" | {self.numbering.counters[chosen].name} = {self.reading}"
        _torch().cuda.nvtx.mark(label)
