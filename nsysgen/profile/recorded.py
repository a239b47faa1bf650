"""What a run records, in ranks: how many reports, how many ranks each holds, per node and in
total, against what capture.ranks names. One nsys session around a node's launcher (torchrun)
records every rank of the node, so a per-node launch records more than a list of ranks says."""

from __future__ import annotations

from collections import Counter

from nsysgen.model import Config
from nsysgen.profile.estimate import gpus_per_report
from nsysgen.profile.plan_types import RecordedRanks, RecordedTasks


def recorded_ranks(config: Config, recorded: RecordedTasks) -> RecordedRanks:
    """Computed once, by the plan (ProfilePlan.recorded_ranks)."""
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
        named, text = config.cluster.world_size, str(ranks)
    return RecordedRanks(len(recorded), per_report, per_node, named, text)
