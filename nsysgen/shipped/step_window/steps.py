"""Steps begin and end: the window opens, ranges are pushed and popped, the capture stops."""

from __future__ import annotations

from nsysgen.shipped.step_window.names import NUMBERING_MARK
from nsysgen.shipped.step_window.probes import _torch, _trains
from nsysgen.shipped.step_window.state import WindowState


class WindowSteps(WindowState):
    """Training steps begin and end: the window opens at FIRST, says how it numbers steps,
    stops after LAST, and says at exit what it holds."""

    def _ended_before_window(self) -> None:
        """A training step ended before the window: open it if the next step is FIRST (a
        patched loop opens it at the top of the loop instead)."""
        self.under_way = False
        numbering = self.numbering
        if self.patched:
            return
        following = numbering.number_of_last() + 1
        if not numbering.may_open(following, self.first):
            return
        self.locked = True
        self._say_numbering(following)
        if numbering.steps == 1 and numbering.number_of_last() >= self.first:
            last = numbering.number_of_last()
            self._say(
                "first",
                f"step {last} began before the first optimizer step was seen; the window "
                f"cannot open before step {following}",
            )
        self._begin(following)

    def _say_numbering(self, following: int) -> None:
        numbering = self.numbering
        per_step = numbering.per_step or 1
        if numbering.fixed is None and per_step > 1:
            self._say(
                "per_step",
                f"{per_step} optimizer steps make one training step (the cycle of "
                f"{len(set(numbering.order))} optimizers seen before step {following})",
            )
        index = numbering.chosen()
        if index is not None:
            counter = numbering.counters[index].name
            checked = (
                f"checked over the {numbering.steps} training steps before step {following}"
                if numbering.checked
                else f"not checked: only one training step came before step {following}"
            )
            self._say("numbering", f"steps are numbered by {counter} ({checked})")
            self.source = f"counter={counter}{self._differing(index)}"
            return
        own = (
            "the optimizer's own step count (read at the first step, then counted)"
            if numbering.base
            else "nsysgen's count of training steps (from 0 in this process)"
        )
        reason = numbering.fallback_reason()
        if numbering.irregular:
            reason = reason or (
                f"the {len(self.optimizers)} optimizers step in no regular order: one optimizer "
                "step makes one training step"
            )
        if reason:
            self._say("numbering", f"{reason}: steps are numbered by {own} instead")
            self.source = f"fallback={reason}: numbered by {own}"
        else:
            self._say("numbering", f"steps are numbered by {own}")
            self.source = f"count={own}"

    def _differing(self, index: int) -> str:
        """Where the number the program prints wins over another counter that counted every
        step but gives another number: said, and kept in the numbering mark for verify."""
        numbering = self.numbering
        if not numbering.counters[index].late:
            return ""
        ours = numbering.last[index]
        for other in numbering.valid():
            value, counter = numbering.last[other], numbering.counters[other]
            if other != index and value is not None and value != ours:
                text = f"{counter.name} gives {value} where the program prints {ours}"
                self._say("differ", f"{text}: steps are numbered as the program prints them")
                return f"; {text}"
        return ""

    def _begin(self, step: int) -> None:
        torch = _torch()
        if step > self.last_step:
            self._say(
                "past",
                f"the first step seen here is {step}, past the window "
                f"{self.first}..{self.last_step}: nothing is recorded",
            )
            self._stop_reading()
            return
        if not self.recording and self.first <= step:
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            self.recording = True
            numbering = self.numbering
            torch.cuda.nvtx.mark(
                f"{NUMBERING_MARK} per_step={numbering.per_step or 1} "
                f"checked={numbering.checked} {self.source}"
            )
        # Ranges only inside the window: in a session that records several processes (one
        # torchrun per node), another rank may still be recording this one's next step.
        self.pushed = self.recording
        if self.pushed:
            torch.cuda.nvtx.range_push(f"step {step}")
        self.step, self.taken, self.reading = step, 0, None

    def _end(self) -> None:
        torch = _torch()
        if self.pushed:
            self.pushed = False
            torch.cuda.nvtx.range_pop()
        # The program's counter says which step this was: the next one follows it.
        number = self.step if self.reading is None else self.reading
        self.step, self.under_way, self.ended = None, False, number
        if self.recording and number is not None and number >= self.last_step:
            # Kernels still in flight belong to the window: wait for them before stopping.
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            self.recording = False
            self._stop_reading()
            return
        following = (number if number is not None else self.first) + 1
        if self.patched:
            self.pending = following
        else:
            self._begin(following)

    def _at_exit(self) -> None:
        try:  # noqa: SIM105
            self._exit_message()
        except Exception:  # noqa: BLE001, S110 - at exit: nothing left to protect but the exit
            pass

    def _exit_message(self) -> None:
        if not self.active:
            return
        if self.recording:
            # The last step that ended is the last one whole; the one begun after it is not.
            ended = self.ended
            held = (
                f"steps {self.first}..{ended} only"
                if ended is not None and ended >= self.first
                else "no whole step"
            )
            self._say(
                "short",
                f"the run ended after step {ended}, before step {self.last_step}: the window "
                f"holds {held}",
            )
        elif self.seen == 0 and _trains():
            self._say(
                "none",
                "no optimizer step was seen in this process (no torch.optim optimizer stepped, "
                "or its step is compiled without hooks): the window never opened",
            )
        elif not self.locked and self.seen:
            numbering = self.numbering
            self._say(
                "never",
                f"the run ended after {numbering.steps} training steps "
                f"({self.seen} optimizer steps), before step {self.first}: the window never "
                "opened",
            )
