"""Which Slurm tasks run under nsys, and which of those carry the node-wide collectors.

Selections are conditions on the task's Slurm variables, not lists of every rank, so generated
files do not grow with the cluster; only ranks the user lists appear literally.

Launch shapes:
- per_gpu: one task per GPU. Task id = SLURM_PROCID = global rank.
- per_node: one torchrun per node. Task id = SLURM_PROCID = node index, SLURM_LOCALID is always 0,
  and one report holds every GPU of the node. A listed global rank selects the node it runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nsysgen.model import Config

SelectionKind = Literal["all", "first_on_node", "listed"]


@dataclass(frozen=True)
class TaskSet:
    """A set of Slurm tasks: every task, the first task of each node, or listed task ids."""

    kind: SelectionKind
    tasks: tuple[int, ...] = ()

    def contains(self, task: int, local_id: int) -> bool:
        if self.kind == "all":
            return True
        if self.kind == "first_on_node":
            return local_id == 0
        return task in self.tasks


@dataclass(frozen=True)
class RankSelection:
    profiled: TaskSet
    collectors: TaskSet


def select(config: Config) -> RankSelection:
    """Translate capture.ranks into task conditions for the workload's launch shape."""
    ranks = config.capture.ranks
    per_gpu = config.workload.launch == "per_gpu"
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


def tasks_per_node(config: Config) -> int:
    return config.cluster.gpus_per_node if config.workload.launch == "per_gpu" else 1


def iter_tasks(config: Config) -> list[tuple[int, int, int]]:
    """Every (task id, node index, local id) of the job, in Slurm's block distribution."""
    per_node = tasks_per_node(config)
    return [
        (node * per_node + local, node, local)
        for node in range(config.cluster.nodes)
        for local in range(per_node)
    ]


def explicit_ranks(config: Config) -> tuple[int, ...]:
    """The global training ranks that record, spelled out (for frameworks that need a list)."""
    ranks = config.capture.ranks
    if isinstance(ranks, tuple):
        return tuple(sorted(ranks))
    gpus = config.cluster.gpus_per_node
    if ranks == "one_per_node":
        return tuple(node * gpus for node in range(config.cluster.nodes))
    return tuple(range(config.cluster.world_size))
