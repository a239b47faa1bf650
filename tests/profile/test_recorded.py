"""What a run records, in ranks (recorded.py): a per-node session holds every rank of its node,
so a list of ranks records more than it names; per-GPU tasks record what they name; the plan
computes it once and carries it."""

from __future__ import annotations

from nsysgen.profile.plan_types import RecordedRanks
from nsysgen.profile.recorded import recorded_ranks
from tests.profile.configs import planned


def _ranks(*overrides: str) -> RecordedRanks:
    config, plan = planned(*overrides)
    ranks = recorded_ranks(config, plan.recorded)
    assert plan.recorded_ranks == ranks  # the plan carries it, computed once
    return ranks


def test_a_node_launcher_records_every_rank_of_the_node() -> None:
    ranks = _ranks("workload=fsdp", "capture.ranks=[0,8]")
    assert ranks == RecordedRanks(2, 8, (8, 8), 2, "[0, 8]")
    assert (ranks.total, ranks.extra) == (16, 14)
    assert ranks.text() == (
        "2 reports x 8 ranks (every rank of a node's launcher: nsys wraps the launcher) = 16 "
        "ranks: 8 per node on 2 nodes; capture.ranks=[0, 8] names 2"
    )


def test_per_gpu_tasks_record_what_capture_ranks_names() -> None:
    listed = _ranks("capture.ranks=[0,1,9]")
    assert listed == RecordedRanks(3, 1, (2, 1), 3, "[0, 1, 9]")
    assert listed.extra == 0
    assert listed.text() == (
        "3 reports x 1 rank = 3 ranks: 1 to 2 per node on 2 nodes; capture.ranks=[0, 1, 9] names 3"
    )
    assert _ranks("capture.ranks=one_per_node") == RecordedRanks(2, 1, (1, 1), 2, "one_per_node")
    assert _ranks("capture.ranks=all") == RecordedRanks(16, 1, (8, 8), 16, "all")
