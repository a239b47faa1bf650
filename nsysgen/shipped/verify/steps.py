"""The steps a report holds against the asked ones, and how each process numbered them."""

from __future__ import annotations

import re

from nsysgen.reports.contract import Expect, StepsContract
from nsysgen.shipped.verify.contents import Contents
from nsysgen.shipped.verify.model import (
    Finding,
    Numbering,
    steps_text,
)
from nsysgen.shipped.verify.optimizer import check_optimizer_steps

# The helper's mark as the window opens, once per recording process: how many optimizer steps
# make one training step, how many of the counter's advances it checked before the window, and
# what numbers the steps (the program's counter, nsysgen's own count, or nsysgen's count because
# the counter failed the check: the text says why).
NUMBERING_MARK = re.compile(
    r"nsysgen numbering per_step=(\d+) checked=(\d+) (counter|count|fallback)=(.*)", re.DOTALL
)


def never_opened(expect: Expect) -> str:
    """The likely cause when a report holds nothing of the asked capture, by capture mode."""
    capture = expect["capture"]
    mode = capture["mode"]
    if mode == "steps":
        steps = capture.get("steps")
        other = steps["unopened"] if steps else "the program never started the capture"
        return (
            f"window never reached: the job ended before step {capture['first_step']} (or {other})"
        )
    if mode == "nvtx":
        return (
            f"capture range never started: the program never opened NVTX range "
            f"'{capture['nvtx_range']}'"
        )
    if capture.get("delay"):
        return (
            f"window never reached: the program ended before the window opened "
            f"({capture['delay']} s after launch)"
        )
    return "the program ended before nsys recorded anything"


def check_steps(expect: Expect, steps: StepsContract, contents: Contents, found: Finding) -> None:
    """The step ranges in a report against the asked steps (a steps capture)."""
    capture = expect["capture"]
    first, last = capture["first_step"] or 0, capture["last_step"] or 0
    numbering = _read_numbering(contents, first, found)
    matches = [m for name in contents.ranges if (m := re.fullmatch(steps["regex"], name))]
    if not matches:
        unmarked = steps.get("unmarked")
        if unmarked and contents.kernels:
            found.notes.append(unmarked)
            return
        found.problems.append(f"no step ranges: asked steps {first}..{last}")
        found.causes.append(never_opened(expect))
    elif steps["numbered"]:
        held = sorted({int(m.group(1)) for m in matches})
        if held != list(range(first, last + 1)):
            found.problems.append(f"holds steps {steps_text(held)}, asked {first}..{last}")
            found.causes.append(_why_steps_differ(held[-1] < last, last))
        asked = capture.get("optimizer_steps")
        if asked:
            check_optimizer_steps(steps["regex"], asked, numbering, contents, found)
    elif len(matches) != last - first + 1:
        found.problems.append(
            f"holds {len(matches)} steps, asked {last - first + 1} (steps {first}..{last})"
        )
        found.causes.append(_why_steps_differ(len(matches) < last - first + 1, last))


def _read_numbering(contents: Contents, first: int, found: Finding) -> dict[int, Numbering]:
    """How each process's helper numbered its steps (its numbering mark, the first if several),
    kept in the finding for --json; a note where the numbers are not the program's own, or the
    program's counter could not be checked before the window."""
    numbering: dict[int, Numbering] = {}
    for process, _, text in contents.numbering:
        mark = NUMBERING_MARK.fullmatch(text)
        if mark is None or process in numbering or int(mark.group(1)) < 1:
            continue  # not this protocol's mark: the report is checked as without one
        per_step, checked, source, how = mark.groups()
        numbering[process] = Numbering(process, source, how, int(per_step), int(checked))
    for facts in numbering.values():
        found.numbering.append(facts)
        if facts.source == "fallback":
            # Not a failure of the window: its steps are whole and counted, only their numbers
            # are nsysgen's (from 0, or from where the helper began counting).
            found.notes.append(
                f"process {facts.process}: steps numbered by nsysgen's own count, not the "
                f'program\'s counter ({facts.text}): a range "step N" may not be the step the '
                "program's log calls N"
            )
        elif facts.source == "counter" and facts.checked == 0:
            found.notes.append(
                f"process {facts.process}: steps numbered by the program's counter "
                f"{facts.text}, which could not be checked before the window (too few steps "
                f"before step {first})"
            )
    return numbering


def _why_steps_differ(short: bool, last: int) -> str:
    if short:
        return f"the job ended (or was stopped) before step {last}"
    return "the capture did not open and close at the asked steps"
