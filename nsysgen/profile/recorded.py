"""What a run records, in ranks: how many reports, how many ranks each holds, per node and in
total, against what capture.ranks names. One nsys session around a node's launcher (torchrun)
records every rank of the node, so a per-node launch records more than a list of ranks says."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from nsysgen.model import Config
from nsysgen.profile.estimate import gpus_per_report
from nsysgen.profile.plan_types import ProfilePlan


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


def recorded_ranks(config: Config, plan: ProfilePlan) -> RecordedRanks:
    recorded = plan.recorded
    per_report = gpus_per_report(config) if recorded.unit == "node" else 1
    if recorded.listed is not None:
        tasks = Counter(node for _, node, _ in recorded.listed)
        per_node = tuple(tasks[node] * per_report for node in sorted(tasks))
    else:
        per_node = (len(recorded.locals_) * per_report,) * recorded.nodes
    ranks = config.capture.ranks
    if isinstance(ranks, tuple):
        named, text = len(ranks), f"[{', '.join(map(str, ranks))}]"
    elif ranks == "one_per_node":
        named, text = config.cluster.nodes, ranks
    else:
        named, text = plan.world_size, str(ranks)
    return RecordedRanks(len(recorded), per_report, per_node, named, text)
