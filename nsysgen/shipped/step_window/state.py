"""The window's settings and state, its messages, and how it stops without stopping the run."""

from __future__ import annotations

import os
import sys

from nsysgen.shipped.step_window.counters import Counter, ExprCounter, HintCounter, LibraryCounter
from nsysgen.shipped.step_window.names import (
    FIRST_STEP,
    HELPER_LOG,
    LAST_STEP,
    OPTIMIZER_STEPS,
    RANKS,
    STEP_EXPR,
    STEP_SCOPE,
)
from nsysgen.shipped.step_window.numbering import Numbering
from nsysgen.shipped.step_window.printed import PrintedCounter
from nsysgen.shipped.step_window.probes import _number, _torch

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class WindowState:
    """The window's settings (from the environment) and state, what it says, and how it
    stops recording."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        first = env.get(FIRST_STEP, "").strip()
        last = env.get(LAST_STEP, "").strip()
        per_step = env.get(OPTIMIZER_STEPS, "").strip()
        self.active = False
        self.installed = False
        # Another copy of the helper (a patched script's own) that hooked torch first: its window.
        self.owner: Any = None
        self.said: set[str] = set()
        self.patched = False  # open() is called at the loop's top (a training-loop patch)
        self.under_way = False  # patched loop: a step began at open() and has not ended
        self.locked = False  # the numbering is decided (when the window's first step began)
        self.recording = False
        self.done = False
        self.pushed = False  # the step's NVTX range is open (only inside the window)
        self.step: int | None = None  # the number of the step under way, once locked
        self.pending: int | None = None  # patched loop: the number the next open() begins
        self.taken = 0  # optimizer steps taken in the step under way, once locked
        self.seen = 0  # optimizer step() calls seen, skipped ones included
        self.depth = 0  # optimizer steps running inside each other (a wrapper's inner step)
        self.outer: object = None  # the optimizer whose step is running (depth 1)
        self.reading: int | None = None  # the chosen counter at the running optimizer step
        self.readings: tuple[int | None, ...] = ()  # every counter, before the window
        self.ended: int | None = None  # the number of the step that ended last, once locked
        self.source = ""  # how the window's steps are numbered (its numbering mark)
        self.optimizers: dict[int, int] = {}
        self.attached: list[Any] = []  # library trainers given a step callback (once each)
        self.first = self.last_step = 0
        self.log = env.get(HELPER_LOG, "")
        valid = first.isdigit() and last.isdigit() and (not per_step or per_step.isdigit())
        if not valid or per_step == "0" or (per_step and not int(per_step)):
            return
        ranks = env.get(RANKS, "")
        rank = _number(env, "RANK", "SLURM_PROCID")
        local_rank = _number(env, "LOCAL_RANK", "SLURM_LOCALID")
        self.active = (
            ranks == "all"
            or (ranks == "one_per_node" and local_rank == 0)
            or str(rank) in ranks.split(",")
        )
        self.first, self.last_step = int(first), int(last)
        self.hint = HintCounter()
        counters: list[Counter] = [self.hint]
        expr, scope = env.get(STEP_EXPR, "").strip(), env.get(STEP_SCOPE, "").strip()
        if expr:
            counters.append(ExprCounter(expr, scope))
        counters.append(LibraryCounter())
        self.printed = PrintedCounter()
        counters.append(self.printed)
        self.numbering = Numbering(counters, int(per_step) if per_step else None)

    def _say(self, key: str, text: str) -> None:
        if key in self.said:
            return
        self.said.add(key)
        # contextlib.suppress would import modules into every process: try/except imports none.
        line = f"nsysgen: {text}"
        try:  # noqa: SIM105
            sys.stderr.write(line + "\n")  # not print(): the helper reads the program's prints
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass  # no stderr (closed, a broken pipe): the message is lost, not the run
        if self.log:
            try:  # noqa: SIM105
                with open(self.log, "a", encoding="utf-8") as file:  # noqa: PTH123
                    file.write(f"{os.getpid()} {line}\n")
            except OSError:
                pass  # a folder that is gone: stderr has it

    def _stop_reading(self) -> None:
        """The window is done: the program's lines are no longer read."""
        self.done = True
        self.printed.stop()

    def _refuse(self, reason: str) -> None:
        self._say("refused", reason)
        self.active = False
        self._stop_reading()
        torch = _torch()
        self.step = None
        if self.pushed:  # popped while the capture still records, so that the range ends
            self.pushed = False
            torch.cuda.nvtx.range_pop()
        if self.recording:
            self.recording = False
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()

    def _fail(self, error: BaseException) -> None:
        """A failure of the helper itself: the training goes on, without a window."""
        try:  # noqa: SIM105
            self._refuse(f"the step helper stopped ({error!r}): the window is not recorded")
        except Exception:  # noqa: BLE001, S110 - nothing more can be done for the window
            pass
