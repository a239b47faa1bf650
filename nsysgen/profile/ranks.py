"""Which Slurm tasks run under nsys, and which of those carry the node-wide collectors.

Selections are conditions on the task's Slurm variables, not lists of every rank, so generated
files do not grow with the cluster; only ranks the user lists appear literally.

Launch shapes:
- per_gpu: one task per GPU. Task id = SLURM_PROCID = global rank.
- per_node: one torchrun per node. Task id = SLURM_PROCID = node index, SLURM_LOCALID is always 0,
  and one report holds every GPU of the node. A listed global rank selects the node it runs on.
"""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile.plan_types import RankSelection, TaskSet


def select(config: Config) -> RankSelection:
    """Translate capture.ranks into task conditions for the workload's launch shape."""
    ranks = config.capture.ranks
    per_gpu = config.setup.per_gpu
    gpus = config.cluster.gpus_per_node
    if isinstance(ranks, tuple):
        if per_gpu:
            first_per_node = {rank // gpus: rank for rank in sorted(ranks, reverse=True)}
            return RankSelection(
                profiled=TaskSet("listed", tuple(sorted(ranks))),
                collectors=TaskSet("listed", tuple(sorted(first_per_node.values()))),
            )
        nodes = tuple(sorted({rank // gpus for rank in ranks}))
        return RankSelection(TaskSet("listed", nodes), TaskSet("listed", nodes))
    if not per_gpu:
        return RankSelection(TaskSet("all"), TaskSet("all"))
    if ranks == "one_per_node":
        return RankSelection(TaskSet("first_on_node"), TaskSet("first_on_node"))
    return RankSelection(TaskSet("all"), TaskSet("first_on_node"))


def explicit_ranks(config: Config) -> tuple[int, ...]:
    """The global training ranks that record, spelled out (for frameworks that need a list)."""
    ranks = config.capture.ranks
    if isinstance(ranks, tuple):
        return tuple(sorted(ranks))
    gpus = config.cluster.gpus_per_node
    if ranks == "one_per_node":
        return tuple(node * gpus for node in range(config.cluster.nodes))
    return tuple(range(config.cluster.world_size))
