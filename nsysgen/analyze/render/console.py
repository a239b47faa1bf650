"""The order of what `nsysgen analyze` prints: the verdict and the straggler evidence first, the
baseline's verdict next, then the figures, and the notes (what was not drawn or not computed)
and the files written last. The reduction says things in the order it finds them; a reader
needs the answer on the first line."""

from __future__ import annotations

from collections.abc import Iterable

# Said about the analysis rather than found in the reports: printed after the findings.
NOTE_PREFIXES = ("no NCCL kernels", "not drawn:", "limit:", "warning:", "no step NVTX ranges")
FILE_PREFIXES = ("wrote ", "report: ")
# Findings that answer "who was late" and "did it regress", in this order (the figures that
# regressed and those that grew by waiting for a late peer together, as compared).
FIRST_PREFIXES = (
    ("verdict:",),
    ("straggler:", "stragglers:"),
    ("regression:",),
    ("baseline ",),
    ("REGRESSED", "waited "),
)


def is_note(line: str) -> bool:
    return line.startswith(NOTE_PREFIXES)


def _rank(line: str) -> int:
    text = line.lstrip()
    for i, prefixes in enumerate(FIRST_PREFIXES):
        if text.startswith(prefixes):
            return i
    if line.startswith(FILE_PREFIXES):
        return len(FIRST_PREFIXES) + 3
    if is_note(line):
        return len(FIRST_PREFIXES) + 2
    return len(FIRST_PREFIXES) + 1


def order(lines: Iterable[str]) -> list[str]:
    """The lines, findings first (a stable sort: lines of one kind keep their order)."""
    return sorted(lines, key=_rank)
