"""The step number the program prints or logs, read from its own lines (print() and the logging
module's records): a counter like the others, checked from step to step, so that where nothing
else numbers the steps they are numbered as the program's log numbers them, and where something
else does, a witness that says when the two differ."""

from __future__ import annotations

from nsysgen.shipped.step_window.counters import Counter

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# A step number in a log line: after "step", "global_step", "iter" or "iteration" (any case;
# not "steps" or "step_time"), with at most three of " :=#[" between ("step 12", "Step [12/100]",
# "iter: 12", "global_step=12"). The first in the line is read.
PATTERN = r"(?i)(?<![\w.])(?:global[_ ]?step|step|iter(?:ation)?)(?!\w)[\s:=#\[]{0,3}(\d+)"


class PrintedCounter(Counter):
    """The last step number the program's lines gave, as the number of the step about to run.

    A line printed between two optimizer steps names either the step that just ran (printed
    after its optimizer step: `opt.step(); step += 1; print(step)`) or the one about to run
    (printed before its optimizer step, once its loss is known). Which, is decided once, from
    the first line read: printed before any optimizer step, or after a backward pass began
    since the last one, it names the step to come; else the step that ran. (A line printed at
    the top of an iteration, before its forward pass, is taken for the step that ran.)"""

    late = True  # read only once the program has printed a number: no reading before is a fault

    def __init__(self) -> None:
        self.name = "the step number the program prints"
        self.value: int | None = None  # the number of the last line read
        self.ahead: bool | None = None  # its line named the step to come (None: none read yet)
        self.stepped_once = False  # an optimizer step ended
        self.backward = False  # a backward pass began since the last optimizer step ended
        self.shift: int | None = None  # 1: a line names the step that ran; 0: the step to come
        self.listening = False
        self.unhook: list[Callable[[], None]] = []

    def read(self, frame: object) -> int | None:
        if self.value is None:
            return None
        if self.shift is None:
            self.shift = 0 if self.ahead else 1
            placed = "before" if self.ahead else "after"
            self.name = f"the step number the program prints ({placed} the optimizer step)"
        return self.value + self.shift

    def stepped(self) -> None:
        self.stepped_once, self.backward = True, False

    def heard(self, text: str) -> None:
        import re

        found = re.search(PATTERN, text)
        if found is not None:
            self.value = int(found.group(1))
            if self.ahead is None:
                self.ahead = self.backward or not self.stepped_once

    def install(self, torch: Any) -> None:
        """Hook print(), the logging module's handlers and torch.autograd.backward (the one
        Tensor.backward calls), once torch is imported. Each is put back at stop() only where
        nothing wrapped it since (another wrapper's would be undone)."""
        import builtins
        import logging

        self.listening = True
        counter = self
        self._wrap(builtins, "print", lambda args: counter._safely(lambda: _joined(args)))
        self._wrap(logging.Handler, "handle", lambda args: counter._safely(lambda: _record(args)))
        self._wrap(getattr(torch, "autograd", None), "backward", lambda args: counter._backward())

    def _backward(self) -> None:
        self.backward = True

    def _wrap(self, owner: Any, name: str, after: Callable[[tuple[Any, ...]], None]) -> None:
        """owner.name calls `after` with its arguments once it returned (while listening)."""
        original = getattr(owner, name, None)
        if original is None:
            return
        counter = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if counter.listening:
                after(args)
            return result

        setattr(owner, name, wrapper)

        def restore() -> None:
            if getattr(owner, name, None) is wrapper:
                setattr(owner, name, original)

        self.unhook.append(restore)

    def _safely(self, text: Callable[[], str]) -> None:
        # contextlib.suppress would import a module into every process: try/except imports none.
        try:  # noqa: SIM105
            self.heard(text())
        except Exception:  # noqa: BLE001, S110 - a line the helper cannot read is not read
            pass

    def stop(self) -> None:
        """The window is done: no more reading of the program's lines."""
        self.listening = False
        for restore in self.unhook:
            restore()
        self.unhook.clear()


def _joined(args: tuple[Any, ...]) -> str:
    return " ".join(str(a) for a in args)


def _record(args: tuple[Any, ...]) -> str:
    """A record's message, read once: a record goes through every handler of its logger."""
    record = args[1]
    if getattr(record, "_nsysgen_read", False):
        return ""
    record._nsysgen_read = True
    return str(record.getMessage())
