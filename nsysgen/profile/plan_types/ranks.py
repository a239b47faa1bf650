"""What a run records, in ranks (computed by nsysgen/profile/recorded.py, carried by the plan):
how many reports, how many ranks each holds, per node and in total, against what capture.ranks
names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RecordedRanks:
    reports: int
    ranks_per_report: int  # 1, or every rank of a node's launcher
    per_node: tuple[int, ...]  # recorded ranks of each recording node
    named: int  # the ranks capture.ranks names
    named_text: str  # capture.ranks as the user wrote it

    @property
    def total(self) -> int:
        return sum(self.per_node)

    @property
    def extra(self) -> int:
        """Ranks recorded beyond those capture.ranks names."""
        return max(0, self.total - self.named)

    def text(self) -> str:
        """ "2 reports x 8 ranks (...) = 16 ranks: 8 per node on 2 nodes; capture.ranks=[0, 8]
        names 2"."""
        low, high = (min(self.per_node), max(self.per_node)) if self.per_node else (0, 0)
        each = f"{low}" if low == high else f"{low} to {high}"
        held = (
            " (every rank of a node's launcher: nsys wraps the launcher)"
            if self.ranks_per_report > 1
            else ""
        )
        return (
            f"{_count(self.reports, 'report')} x {_count(self.ranks_per_report, 'rank')}{held}"
            f" = {_count(self.total, 'rank')}: {each} per node on "
            f"{_count(len(self.per_node), 'node')}; capture.ranks={self.named_text} names "
            f"{self.named}"
        )


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
