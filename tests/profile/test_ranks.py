"""capture.ranks as task conditions (ranks.py): listed global ranks as tasks (per GPU) or as the
nodes they run on (per node), the first listed rank of each node running the collectors, the
policies as conditions that do not grow with the cluster, and the ranks spelled out."""

from __future__ import annotations

import pytest

from nsysgen.profile.plan_types import RankSelection, TaskSet
from nsysgen.profile.ranks import explicit_ranks, select
from tests.profile.configs import config

ALL, FIRST = TaskSet("all"), TaskSet("first_on_node")


@pytest.mark.parametrize(
    ("overrides", "selection"),
    [
        (
            ("capture.ranks=[9,0,8,1]",),
            RankSelection(TaskSet("listed", (0, 1, 8, 9)), TaskSet("listed", (0, 8))),
        ),
        (
            ("capture.ranks=[15,9]",),
            RankSelection(TaskSet("listed", (9, 15)), TaskSet("listed", (9,))),
        ),
        (
            ("workload=fsdp", "capture.ranks=[9,0,1]"),
            RankSelection(TaskSet("listed", (0, 1)), TaskSet("listed", (0, 1))),
        ),
        (("capture.ranks=all",), RankSelection(ALL, FIRST)),
        (("capture.ranks=one_per_node",), RankSelection(FIRST, FIRST)),
        (("workload=fsdp", "capture.ranks=one_per_node"), RankSelection(ALL, ALL)),
        (("workload=fsdp", "capture.ranks=all"), RankSelection(ALL, ALL)),
    ],
    ids=[
        "per-gpu-listed",
        "per-gpu-collector-is-the-lowest-of-its-node",
        "per-node-listed-are-nodes",
        "per-gpu-all",
        "per-gpu-one-per-node",
        "per-node-one-per-node",
        "per-node-all",
    ],
)
def test_the_selection_for_the_launch_shape(
    overrides: tuple[str, ...], selection: RankSelection
) -> None:
    assert select(config(*overrides)) == selection


@pytest.mark.parametrize(
    ("overrides", "ranks"),
    [
        (("capture.ranks=[9,0]",), (0, 9)),
        (("capture.ranks=one_per_node", "cluster.nodes=3"), (0, 8, 16)),
        (("capture.ranks=all", "cluster.nodes=1", "cluster.gpus_per_node=4"), (0, 1, 2, 3)),
    ],
    ids=["listed", "one-per-node", "all"],
)
def test_the_ranks_spelled_out(overrides: tuple[str, ...], ranks: tuple[int, ...]) -> None:
    assert explicit_ranks(config(*overrides)) == ranks
