"""The loop's top: a patched loop's open(), and a library trainer's callback (attach)."""

from __future__ import annotations

from nsysgen.shipped.step_window.hooks import OptimizerHooks

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from typing import Any


def _read(counter: Any) -> int | None:
    """A library's step number, None where this version of it has no such attribute: the
    helper then numbers the step itself (and never stops the training)."""
    try:
        return int(counter())
    except Exception:  # noqa: BLE001 - a library's callback must not raise into its loop
        return None


class StepWindow(OptimizerHooks):
    """Records training steps FIRST..LAST (both included) with cudaProfilerStart/Stop."""

    def open(self, step: int | None = None) -> None:
        """Top of an iteration of the step loop: a step begins unless one is under way."""
        if not self.active:
            return
        self.install()
        if self.owner is not None:
            self.owner.open(step)
            return
        try:
            self._open(step)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _open(self, step: int | None) -> None:
        self.patched = True
        self.hint.value = step if isinstance(step, int) else None
        self.hint.given = self.hint.given or self.hint.value is not None
        if self.under_way or self.done:
            return
        self.under_way = True
        numbering = self.numbering
        if not self.locked:
            # The loop's top says which step begins: the window opens with it, not after it.
            if not numbering.failed[0] and self.hint.value is not None:
                number = self.hint.value
            else:
                number = numbering.number_of_last() + 1 if numbering.steps else 0
            if not numbering.may_open(number, self.first):
                return
            self.locked = True
            self._say_numbering(number)
        elif numbering.chosen() == 0 and self.hint.value is not None:
            number = self.hint.value
        else:
            number = self.first if self.pending is None else self.pending
        self._begin(number)

    begin = open  # the name of earlier releases

    def attach(self, trainer: Any) -> None:
        """Where a library owns the loop (training-loop.patch calls this before `.train()` or
        `.fit()`): a callback of the library opens each step at its start, numbered as the
        library logs it. The Hugging Face Trainer's `on_step_begin` (before the step's first
        micro-batch) opens `state.global_step + 1`; Lightning's `on_train_batch_start` opens
        the fit loop's count of batches that stepped, the loggers' step (a micro-batch of the
        same step opens nothing new); Ignite's
        ITERATION_STARTED event opens `engine.state.iteration`."""
        if not self.active:
            return
        try:
            self._attach(trainer)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _attach(self, trainer: Any) -> None:
        # Once per trainer: the patch attaches before every call of its loop (a resumed run
        # and a fresh one in two branches, or both one after the other).
        if any(other is trainer for other in self.attached):
            return
        self.attached.append(trainer)
        window = self
        modules = {c.__module__.partition(".")[0] for c in type(trainer).__mro__}
        if "transformers" in modules:
            base: Any = __import__("transformers").TrainerCallback

            class HuggingFaceSteps(base):  # type: ignore[misc]
                def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                    window.open(_read(lambda: state.global_step + 1))

            trainer.add_callback(HuggingFaceSteps())
            return
        if "ignite" in modules:
            events: Any = __import__("ignite.engine", fromlist=["Events"]).Events

            def ignite_step(engine: Any) -> None:
                window.open(_read(lambda: engine.state.iteration))

            trainer.add_event_handler(events.ITERATION_STARTED, ignite_step)
            return
        package = next((m for m in ("lightning", "pytorch_lightning") if m in modules), None)
        if package is None:
            names = ", ".join(sorted(modules))
            raise TypeError(f"no step callback for a trainer of {names}")
        callbacks = __import__(f"{package}.pytorch" if package == "lightning" else package)
        callback: Any = (callbacks.pytorch if package == "lightning" else callbacks).Callback

        class LightningSteps(callback):  # type: ignore[misc]
            def on_train_batch_start(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
                window.open(_read(lambda: trainer.fit_loop.epoch_loop._batches_that_stepped))

        trainer.callbacks.append(LightningSteps())

    def end(self, ended: bool = True) -> None:
        """Earlier releases ended steps here; now the optimizer step ends them."""

    def close(self) -> None:
        """Earlier releases ended steps here; now the optimizer step ends them."""
