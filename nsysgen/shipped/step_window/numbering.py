"""How the steps before the window are numbered: the optimizers' cycle, and which counter still
counts steps."""

from __future__ import annotations

from nsysgen.shipped.step_window.counters import Counter, HintCounter, LibraryCounter
from nsysgen.shipped.step_window.names import LATE_READS, LEARN_LIMIT


def period(order: list[int]) -> int | None:
    """The shortest cycle of the optimizers' order, seen at least twice (None: not yet)."""
    distinct = len(set(order))
    if distinct <= 1:
        return 1
    for length in range(distinct, len(order) // 2 + 1):
        if all(order[i] == order[i - length] for i in range(length, len(order))):
            return length
    return None


class Numbering:
    """Training steps before the window, from the optimizer steps seen: how many optimizer
    steps make one, which counters still count them (checked from step to step) and the
    number of the step that ended last."""

    def __init__(self, counters: list[Counter], per_step: int | None) -> None:
        self.counters = counters
        self.fixed = per_step  # capture.optimizer_steps, else learned
        self.per_step = per_step
        self.frozen = per_step is not None  # learned (or given) for good
        self.irregular = False  # no cycle in the optimizers' order: one optimizer step a step
        self.order: list[int] = []  # which optimizer took each optimizer step, while learning
        self.first: dict[int, int] = {}  # each optimizer's first step's place in `order`
        # The phases (optimizers made one after another, never taken for one cycle): where
        # each began in `order`, the steps ended before it, and the cycle in force before it.
        self.phases: list[tuple[int, int, int]] = [(0, 0, per_step or 1)]
        self.settled = per_step or 1  # the latest phase's cycle, once known
        self.moved = False  # a phase began or was undone since the last recheck
        # The counters at each optimizer step: all of them while learning, then the step's own.
        self.readings: list[tuple[int | None, ...]] = []
        self.count = 0  # optimizer steps seen
        self.offset = 0  # optimizer steps before `order` began (learning begun again)
        # The counters' judgement when learning began again: a recheck starts from it.
        self.kept: tuple[list[str], list[int | None], list[int]] | None = None
        self.steps = 0  # training steps ended
        self.base: int | None = None  # the optimizer's own step count at the first step
        self.failed = ["" for _ in counters]  # per counter: why it does not count steps
        self.last: list[int | None] = [None for _ in counters]  # each at the last step ended
        self.reads = [0 for _ in counters]  # per counter: training steps it was read at
        self.checked = 0  # step-to-step advances checked

    def add(self, optimizer: int, readings: tuple[int | None, ...]) -> bool:
        """One optimizer step; True when it ends a training step."""
        self.count += 1
        if self.frozen and self.fixed is None and optimizer not in self.first:
            self._again()
        self.readings.append(readings)
        if not self.frozen:
            self._learn(optimizer)
        per_step = self.per_step
        begun, base = self.phase
        done = self.count - self.offset - begun  # optimizer steps in the latest phase
        if per_step is None or done % per_step:
            return False
        if self.steps < base + done // per_step:  # not judged already by a new cycle's recheck
            self._check(self.readings[-per_step:])
        if self.frozen:
            self.readings.clear()
        return True

    def _learn(self, optimizer: int) -> None:
        self.first.setdefault(optimizer, len(self.order))
        self.order.append(optimizer)
        learned = self.per_step
        order = self.order
        if learned is None or (len(order) > learned and order[-1] != order[-1 - learned]):
            learned = self._cycle()
        if self.count - self.offset >= LEARN_LIMIT:
            self.frozen, self.order = True, []
            if learned is None:
                learned, self.irregular = 1, True
        if learned != self.per_step or self.moved:
            self.per_step, self.moved = learned, False
            self._recheck()
        if self.frozen and learned is not None:
            # From here on only the step under way is judged: keep the last step's readings.
            self.readings = self.readings[-learned:]

    def _again(self) -> None:
        """An optimizer never seen steps after learning stopped (a phase made after LEARN_LIMIT
        optimizer steps): learn again from here, the steps ended so far kept, so that a phase
        of another cycle (one optimizer after a GAN's two) is counted by its own."""
        self.offset = self.count - 1
        self.frozen, self.order, self.first, self.readings = False, [], {}, []
        self.phases = [(0, self.steps, self.per_step or 1)]
        self.settled, self.per_step = self.per_step or 1, None
        self.kept = (list(self.failed), list(self.last), list(self.reads))

    @property
    def phase(self) -> tuple[int, int]:
        """The latest phase: where it began in `order`, and the steps ended before it."""
        start, base, _ = self.phases[-1]
        return start, base

    def _alone(self, start: int) -> bool:
        """No optimizer seen before `start` has stepped since."""
        first = self.first
        return all(first[o] >= start for o in self.order[start:])

    def _cycle(self) -> int | None:
        """The cycle of the optimizers' order. Optimizers made one after another are phases,
        not a cycle (a second phase of training, layers unfrozen, an optimizer made anew each
        epoch, a library loop resumed): a phase begins where new optimizers took two steps
        with none of the earlier ones, after the phase before showed its own cycle twice (the
        third optimizer of a cycle of three is no phase), and ends undone if an earlier one
        steps again. The cycle is the latest phase's (the one before holds until it shows its
        own); the steps before it stay as they were counted."""
        order = self.order
        while len(self.phases) > 1 and not self._alone(self.phases[-1][0]):
            _, _, self.settled = self.phases.pop()
            self.moved = True
        begun, base, _ = self.phases[-1]
        for start in sorted(set(self.first.values())):
            if start <= begun or len(order) - start < 2 or not self._alone(start):
                continue
            before = period(order[begun:start])
            if before is not None and start - begun >= 2 * before:
                self.phases.append((start, base + (start - begun) // before, self.settled))
                self.settled, self.moved = before, True
                break
        begun = self.phases[-1][0]
        if not begun:
            return period(order)
        found = period(order[begun:])
        return found if found is not None else self.settled

    def _recheck(self) -> None:
        """The cycle changed: judge every step of the latest phase again (from the counters'
        judgement when learning began again, if it did)."""
        begun, self.steps = self.phase
        if begun == 0 and self.kept is not None:
            failed, last, reads = self.kept
            self.failed, self.last, self.reads = list(failed), list(last), list(reads)
        else:
            self.failed = ["" for _ in self.counters]
            self.last = [None for _ in self.counters]
            self.reads = [0 for _ in self.counters]
        self.checked = 0
        per_step = self.per_step
        if per_step is None:
            return
        if begun == self.phases[-1][0]:
            self.settled = per_step
        for start in range(begun, len(self.readings) - per_step + 1, per_step):
            self._check(self.readings[start : start + per_step])

    def _check(self, group: list[tuple[int | None, ...]]) -> None:
        """A training step ended: does each counter still count steps?"""
        step = self.steps
        self.steps += 1
        for index, counter in enumerate(self.counters):
            if self.failed[index]:
                continue
            values = {reading[index] for reading in group}
            value, last = group[0][index], self.last[index]
            if values == {None} and last is None and counter.late:
                continue  # nothing read from it yet (the program's first printed step number)
            if counter.broken:
                self.failed[index] = counter.broken
            elif value is None or None in values:
                self.failed[index] = f"{counter.name} could not be read at training step {step}"
            elif len(values) > 1:
                seen = ", ".join(str(v) for v in sorted(v for v in values if v is not None))
                self.failed[index] = (
                    f"{counter.name} changed within one training step of {len(group)} "
                    f"optimizer steps ({seen})"
                )
            elif last is not None and value != last + 1:
                self.failed[index] = (
                    f"{counter.name} went from {last} to {value} from one training step to the "
                    "next (a step counter advances by exactly 1)"
                )
            self.last[index] = value
            self.reads[index] += 1
        self.checked = step

    def chosen(self) -> int | None:
        """The counter that numbers the steps (its index), None: the helper's own count. The
        number the program prints wins where it counted every step; the others in order."""
        # A late counter read at fewer than LATE_READS steps is not judged yet (a line every
        # few steps reads the same number twice only later).
        late = [i for i in self.valid() if self.counters[i].late and self.reads[i] >= LATE_READS]
        valid = [i for i in self.valid() if not self.counters[i].late]
        ranked = late or valid
        return ranked[0] if ranked else None

    def valid(self) -> list[int]:
        """The counters that counted every training step so far (the late ones: since read)."""
        return [i for i, failed in enumerate(self.failed) if not failed]

    def number_of_last(self) -> int:
        """The number of the training step that ended last."""
        index = self.chosen()
        value = None if index is None else self.last[index]
        return (self.base or 0) + self.steps - 1 if value is None else value

    def may_open(self, number: int, first: int) -> bool:
        """The step about to begin, numbered `number`, may open the window at FIRST: a counter
        seen at one step only, which jumps past FIRST while the helper's own count has not
        reached it, waits for the next step to be checked (a micro-batch counter does so)."""
        if number < first:
            return False
        index = self.chosen()
        unchecked = index is not None and self.reads[index] < 2
        return not unchecked or (self.base or 0) + self.steps >= first

    def fallback_reason(self) -> str:
        """Why the counter nsysgen expected does not number the steps ("": none expected)."""
        for index, counter in enumerate(self.counters):
            failed = self.failed[index]
            absent = (
                (isinstance(counter, LibraryCounter) and counter.library is None)
                or (isinstance(counter, HintCounter) and not counter.given)
                or counter.late  # a program that prints no step number every step: not expected
            )
            if failed and not absent:
                return failed
        return ""
