"""The steps an analysis judged, as one typed value. judge/ decides them once: the window's
edges (the first and last recorded step, which the capture's open and close pause) are left out
(summary.py's first/last_step_ignored), and so is a step no rank could be judged on (waiting.py's
by_step flag). The summary carries it (summary_types.Summary.judged); every reader (the views,
the HTML report, the regression gate) reads it there, and a summary.json read back, even one
written by an older nsysgen, gets its own here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JudgedWindow:
    first_edge: int | None  # the first recorded step, not judged (None: no steps)
    last_edge: int | None  # the last, where a step lies between them
    judged: tuple[int, ...]  # the steps the verdict judged ((): none flagged, an old summary)

    @classmethod
    def read_back(cls, data: Mapping[str, Any]) -> JudgedWindow:
        """The judged window of summary.json's object (an older one: by_step unflagged, or
        only its first edge)."""
        first, last = data.get("first_step_ignored"), data.get("last_step_ignored")
        rows = data.get("by_step") or []
        return cls(
            step_or_none(first),
            step_or_none(last),
            tuple(
                int(row["step"]) for row in rows if isinstance(row, Mapping) and row.get("judged")
            ),
        )

    @property
    def edges(self) -> frozenset[int]:
        return frozenset(e for e in (self.first_edge, self.last_edge) if e is not None)

    def steps(self, recorded: Iterable[int]) -> list[int]:
        """The judged steps; where none is flagged, the recorded steps inside the edges (all of
        them where nothing lies inside)."""
        if self.judged:
            return list(self.judged)
        steps = set(recorded)
        return sorted(steps - self.edges) or sorted(steps)

    def keeps(self, step: int, alone: bool) -> bool:
        """A rank's step counts in its figures: not an edge, unless it is the rank's only one."""
        return step not in self.edges or alone


def step_or_none(value: object) -> int | None:
    """A step number read from a file: an int, not a bool (JSON's true is no step)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
