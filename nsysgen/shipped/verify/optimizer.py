"""One training step per step range: the optimizer-step marks of the step helper in each."""

from __future__ import annotations

import re

from nsysgen.shipped.verify.contents import Contents
from nsysgen.shipped.verify.model import Finding, Numbering, plural, steps_text

# The step helper's mark: the number of the step range it is in, the optimizer's class and
# index in its process.
OPTIMIZER_MARK = re.compile(r"nsysgen optimizer step (\d+) (\S+)#(\d+)( skipped)?")
# What may follow it: the program's counter that numbered the steps and the value it had at this
# optimizer step. The counter is the program's own expression, which may hold " = " itself: the
# value is after the last one.
COUNTER_READ = re.compile(r" \| (.+) = (-?\d+)", re.DOTALL)


def check_optimizer_steps(
    regex: str,
    asked: int,
    numbering: dict[int, Numbering],
    contents: Contents,
    found: Finding,
) -> None:
    """Every step range holds exactly as many optimizer steps (the helper's marks) as make one
    training step, each marked with the range's own number and, where the program's counter
    numbered the steps, read as that number; no optimizer step falls between the ranges."""
    if not contents.marks:
        found.notes.append(
            "no optimizer-step marks in the report (a helper older than this nsysgen?): "
            "one optimizer step per step range is not checked"
        )
        return
    steps = [
        (process, start, end, int(m.group(1)))
        for process, start, end, name in contents.spans
        if (m := re.fullmatch(regex, name))
    ]
    # Each process steps as its helper learned or was told (its numbering mark), which knows
    # better than the setup (a GAN's 2 optimizers learned at run time); else as the setup asks.
    # Processes that step alike are checked together, as one report always was before.
    processes = {s[0] for s in steps} | {m[0] for m in contents.marks}
    per_process = {p: numbering[p].per_step if p in numbering else asked for p in processes}
    skipped = 0
    for per_step in sorted(set(per_process.values())):
        alike = {p for p, value in per_process.items() if value == per_step}
        skipped += _check_per_step(
            per_step,
            [s for s in steps if s[0] in alike],
            [m for m in contents.marks if m[0] in alike],
            numbering,
            found,
        )
    if skipped:
        found.notes.append(f"{plural(skipped, 'optimizer step')} skipped by GradScaler (inf/nan)")


def _check_per_step(
    per_step: int,
    steps: list[tuple[int, int, int, int]],
    marks: list[tuple[int, int, str]],
    numbering: dict[int, Numbering],
    found: Finding,
) -> int:
    """The optimizer-step check of the processes that take `per_step` optimizer steps a
    training step; returns how many of their optimizer steps GradScaler skipped."""
    inside, outside = _marks_per_step(steps, marks)
    # A script may push "step N" ranges of its own inside nsysgen's: a range within another of
    # the same step and process counts with it (ranges one after another still count apart).
    grouped: dict[int, list[re.Match[str]]] = {}
    for i, (process, start, end, number) in enumerate(steps):
        outer = next(
            j
            for j, other in enumerate(steps)
            if other[0] == process and other[3] == number and other[1] <= start <= end <= other[2]
        )
        grouped.setdefault(outer, []).extend(inside[i])
    counts = [len(held) for held in grouped.values()]
    names = sorted({f"{m.group(2)}#{m.group(3)}" for held in inside for m in held})
    skipped = sum(1 for held in inside for m in held if m.group(4))
    if per_step == 1 and _take_turns(inside) and max(counts, default=0) <= 1:
        found.problems.append(
            f"{len(names)} optimizers take turns ({', '.join(names)}): each iteration is "
            f"{len(names)} step ranges"
        )
        found.causes.append(
            f"several optimizers step each iteration: set capture.optimizer_steps={len(names)}"
        )
        return skipped  # each optimizer counts its own steps: their numbers say nothing more
    if any(count != per_step for count in counts):
        wrong = [
            (steps[j][3], steps[j][0], len(m)) for j, m in grouped.items() if len(m) != per_step
        ]
        _wrong_counts(per_step, counts, names, found, wrong)
    if outside:
        found.problems.append(f"{plural(outside, 'optimizer step')} outside the step ranges")
        found.causes.append("the patched loop is not the loop that steps the optimizer")
    offsets = {int(m.group(1)) - steps[i][3] for i, held in enumerate(inside) for m in held}
    if offsets - {0}:
        shift = max(offsets, key=abs)
        found.problems.append(
            f"step numbers differ from the optimizer step's own by {steps_text(sorted(offsets))}"
        )
        found.causes.append(
            f"step numbers are {abs(shift)} {'below' if shift > 0 else 'above'} the number "
            "read at the optimizer step: the counter jumps, or the step numbering is wrong"
        )
    _check_counter_reads(steps, inside, numbering, found)
    return skipped


def _check_counter_reads(
    steps: list[tuple[int, int, int, int]],
    inside: list[list[re.Match[str]]],
    numbering: dict[int, Numbering],
    found: Finding,
) -> None:
    """Where the program's counter numbered the steps, each optimizer step's reading of it (the
    mark's " | <counter> = <value>") is its range's number. The helper checked the counter before
    the window; one that jumps or restarts inside it (an epoch reset, a resume) is seen only
    here, and then a range's number is not the step the program logs under that number."""
    wrong = []
    for (process, _, _, number), held in zip(steps, inside, strict=True):
        if process in numbering and numbering[process].source != "counter":
            continue  # nsysgen's count numbered them: the counter's readings are not the numbers
        for mark in held:
            read = COUNTER_READ.fullmatch(mark.string, mark.end())
            if read is None or int(read.group(2)) == number:
                continue
            value = int(read.group(2))
            wrong.append(
                f"step {number} of process {process}: {read.group(1)} read {value} at its "
                f"optimizer step ({value - number:+d})"
            )
            break  # one reading a range: the others of the same step say the same
    if wrong:
        more = f" and {len(wrong) - 4} more" if len(wrong) > 4 else ""
        found.problems.append("; ".join(wrong[:4]) + more)
        found.causes.append(
            "the program's counter jumped or restarted inside the window (an epoch reset, a "
            'resume): a range "step N" may hold another step than the one the program logs '
            "as N"
        )


def _marks_per_step(
    steps: list[tuple[int, int, int, int]], marks: list[tuple[int, int, str]]
) -> tuple[list[list[re.Match[str]]], int]:
    """The helper's marks inside each step range (same process), and how many fall between."""
    inside: list[list[re.Match[str]]] = [[] for _ in steps]
    outside = 0
    low = min((s[1] for s in steps), default=0)
    high = max((s[2] for s in steps), default=-1)
    for process, moment, text in marks:
        mark = OPTIMIZER_MARK.match(text)
        if mark is None:
            continue
        held = [i for i, s in enumerate(steps) if s[0] == process and s[1] <= moment <= s[2]]
        if held:
            # The script may name ranges "step N" too: the mark's own step, else the innermost.
            same = [i for i in held if steps[i][3] == int(mark.group(1))]
            inside[(same or held)[-1]].append(mark)
        elif low <= moment <= high:
            outside += 1
    return inside, outside


def _take_turns(inside: list[list[re.Match[str]]]) -> bool:
    """Several optimizers alternate (A B A B), not one replaced by another (A A B B)."""
    left: set[str] = set()
    last = None
    for name in (f"{m.group(2)}#{m.group(3)}" for marks in inside for m in marks):
        if name != last:
            if name in left:
                return True
            if last is not None:
                left.add(last)
            last = name
    return False


def _wrong_counts(
    per_step: int,
    counts: list[int],
    names: list[str],
    found: Finding,
    wrong: list[tuple[int, int, int]],
) -> None:
    """`wrong`: (step, process, optimizer steps held) of each range that holds another count."""
    without, most = counts.count(0), max(counts)
    listed = ", ".join(f"step {step} of process {pid}: {held}" for step, pid, held in wrong[:4])
    more = f" and {len(wrong) - 4} more" if len(wrong) > 4 else ""
    found.problems.append(
        f"{plural(per_step, 'optimizer step')} per step asked; the step ranges hold "
        f"{steps_text(sorted(set(counts)))} ({listed}{more})"
    )
    if without and sum(counts):
        ratio = round(len(counts) / sum(counts))
        found.causes.append(
            f"{ratio} ranges per optimizer step: the patched loop is a micro-batch loop, "
            "not the step loop"
            if ratio > 1
            else "some step ranges hold no optimizer step"
        )
    if most > per_step:
        found.causes.append(
            f"several optimizers step in one step ({', '.join(names)}): set "
            f"capture.optimizer_steps={most}"
            if len(names) > 1
            else f"{most} optimizer steps in one step range: the patched loop is not the "
            "step loop (an epoch loop?)"
        )
