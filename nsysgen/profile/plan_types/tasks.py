"""The recorded tasks of a plan, kept as ranges and a name pattern, and nsys's -o names.

The recorded tasks are kept as ranges and a name pattern (`RecordedTasks`), never as a list of
every rank, so the cost of a plan and of every lint does not grow with the job: 100,000 nodes
cost what 2 do. Names are expanded on request.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from nsysgen.shipped.verify import expand_parts

# Stand-ins for (task, node, local) that no report name holds by chance (checked on probes).
_SENTINELS = (
    (9_100_000_019, 9_200_000_029, 9_300_000_039),
    (8_101_234_567, 8_202_345_678, 8_303_456_789),
)
_PLACEHOLDER = re.compile(r"%q\{([^}]*)\}|%[hpn%]")


@dataclass(frozen=True)
class RecordedTask:
    task: int  # global rank (per GPU), node index (per node), or pod index
    node: int
    local: int
    report: str  # the report path as nsys will name it (without .nsys-rep)
    collectors: bool


NameOf = Callable[[int, int, int], str]  # (task, node, local) -> report name
CollectsOf = Callable[[int, int, int], bool]  # (task, node, local) -> runs the collectors


@dataclass(frozen=True)
class RecordedTasks:
    """The recorded tasks as ranges: every node of [node_start, node_stop) times the local ids
    `locals_` (task = node * per_node + local), or a short list the user wrote (`listed`).

    Counts, collisions of names and collectors per node are computed from the shape and the name
    pattern, never by enumerating; iterating (or indexing) expands names one task at a time.
    `collects` of a grid must depend on the local id only (it does for every selection policy).
    """

    per_node: int
    unit: str  # "rank" (one task per GPU) or "node" (a task is a node)
    name_of: NameOf = field(compare=False)
    collects: CollectsOf = field(compare=False)
    node_start: int = 0
    node_stop: int = 0
    locals_: tuple[int, ...] = ()
    listed: tuple[tuple[int, int, int], ...] | None = None  # (task, node, local)

    @classmethod
    def from_tasks(cls, tasks: Iterable[RecordedTask], per_node: int, unit: str) -> RecordedTasks:
        """A set of tasks a plug-in target enumerated itself (kept as a list); `unit`: what
        one task is (Setup.unit)."""
        items = list(tasks)
        names = {(t.task, t.node, t.local): t for t in items}
        return cls(
            per_node,
            unit,
            lambda task, node, local: names[(task, node, local)].report,
            lambda task, node, local: names[(task, node, local)].collectors,
            listed=tuple(names),
        )

    def __len__(self) -> int:
        if self.listed is not None:
            return len(self.listed)
        return max(0, self.node_stop - self.node_start) * len(self.locals_)

    def _coordinates(self, index: int) -> tuple[int, int, int]:
        if self.listed is not None:
            return self.listed[index]
        node, position = divmod(index, len(self.locals_))
        node += self.node_start
        local = self.locals_[position]
        return node * self.per_node + local, node, local

    def __getitem__(self, index: int) -> RecordedTask:
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        task, node, local = self._coordinates(index % len(self))
        return RecordedTask(
            task, node, local, self.name_of(task, node, local), self.collects(task, node, local)
        )

    def __iter__(self) -> Iterator[RecordedTask]:
        return (self[i] for i in range(len(self)))

    def __bool__(self) -> bool:
        return len(self) > 0

    def between(self, first: int, last: int) -> Iterator[RecordedTask]:
        """The recorded tasks with task ids first..last (both included), in order."""
        if self.listed is not None:
            yield from (self[i] for i, c in enumerate(self.listed) if first <= c[0] <= last)
            return
        start = max(self.node_start, first // self.per_node)
        stop = min(self.node_stop, last // self.per_node + 1)
        for node in range(start, stop):
            for local in self.locals_:
                task = node * self.per_node + local
                if first <= task <= last:
                    yield RecordedTask(
                        task,
                        node,
                        local,
                        self.name_of(task, node, local),
                        self.collects(task, node, local),
                    )

    @property
    def nodes(self) -> int:
        """Nodes with at least one recorded task."""
        if self.listed is not None:
            return len({node for _, node, _ in self.listed})
        return max(0, self.node_stop - self.node_start) if self.locals_ else 0

    def _grid_collecting_locals(self) -> int:
        node = self.node_start
        return sum(self.collects(node * self.per_node + lo, node, lo) for lo in self.locals_)

    @property
    def collector_count(self) -> int:
        if self.listed is not None:
            return sum(self.collects(*c) for c in self.listed)
        return self.nodes * self._grid_collecting_locals()

    def collector_tasks(self, limit: int) -> list[int]:
        """The first `limit` task ids that run the collectors (names are not expanded)."""
        if self.listed is not None:
            return [c[0] for c in self.listed if self.collects(*c)][:limit]
        node = self.node_start
        collecting = [
            lo for lo in self.locals_ if self.collects(node * self.per_node + lo, node, lo)
        ]
        found: list[int] = []
        for node in range(self.node_start, self.node_stop):
            if len(found) >= limit or not collecting:
                break
            found += [node * self.per_node + lo for lo in collecting]
        return found[:limit]

    def crowded_nodes(self) -> tuple[int, int, int]:
        """(nodes with more than one collector, the first of them, its collector count)."""
        if self.listed is not None:
            per_node = Counter(node for c in self.listed if self.collects(*c) for node in [c[1]])
            crowded = sorted(node for node, count in per_node.items() if count > 1)
            return (len(crowded), crowded[0], per_node[crowded[0]]) if crowded else (0, -1, 0)
        count = self._grid_collecting_locals()
        if count > 1 and self.nodes:
            return self.nodes, self.node_start, count
        return 0, -1, 0

    def _varies(self) -> tuple[bool, bool, bool]:
        """Whether a name depends on the task id, the node, the local id (names are built from
        placeholders that each hold one of them, so probing each alone is exact)."""
        base = self.name_of(0, 0, 0)
        return (
            self.name_of(1, 0, 0) != base,
            self.name_of(0, 1, 0) != base,
            self.name_of(0, 0, 1) != base,
        )

    def name_pattern(self) -> list[str | int] | None:
        """A grid's report file name as literal text and coordinates (0 task, 1 node, 2 local),
        read off one name built with sentinel coordinates; None for a list, an empty grid, or
        when no sentinel gives a pattern that rebuilds the first, a middle and the last name."""
        if self.listed is not None or not len(self):
            return None
        probes = [self[0], self[len(self) // 2], self[-1]]
        for sentinel in _SENTINELS:
            name = posixpath.basename(self.name_of(*sentinel))
            pieces = re.split("(" + "|".join(map(str, sentinel)) + ")", name)
            parts: list[str | int] = [
                sentinel.index(int(piece)) if i % 2 else piece for i, piece in enumerate(pieces)
            ]
            parts = [part for part in parts if part != ""]
            if all(
                expand_parts(parts, (t.task, t.node, t.local)) == posixpath.basename(t.report)
                for t in probes
            ):
                return parts
        return None

    def collisions(self) -> tuple[int, str, int]:
        """(names shared by several tasks, an example, how many tasks share it), from the name
        pattern and the shape: a name that holds the task id, or the node and the local id,
        is unique; one that holds only the node is unique with one task per node; and so on."""
        if self.listed is not None:
            counts = Counter(self.name_of(*c) for c in self.listed)
            repeated = [name for name, count in counts.items() if count > 1]
            return (len(repeated), repeated[0], counts[repeated[0]]) if repeated else (0, "", 0)
        by_task, by_node, by_local = self._varies()
        total = len(self)
        if by_task or total == 0:
            return 0, "", 0
        distinct = (self.nodes if by_node else 1) * (len(self.locals_) if by_local else 1)
        if distinct == total:
            return 0, "", 0
        # Every name is shared by the same number of tasks on a grid.
        return distinct, self[0].report, total // distinct

    def describe(self) -> str:
        """The recorded tasks as ranges: "ranks 0-799999", "local rank 0 of nodes 0-99999"."""
        if self.listed is not None:
            ids = sorted({c[0] for c in self.listed})
            if not ids:
                return "none"
            return f"{self.unit}{'s' if len(ids) > 1 else ''} {_ranges(ids)}"
        if not len(self):
            return "none"
        first, last = self.node_start, self.node_stop - 1
        nodes = f"node {first}" if first == last else f"nodes {first}-{last}"
        if self.per_node == 1 or self.unit == "node":
            return nodes
        if len(self.locals_) == self.per_node:
            lo, hi = first * self.per_node, (last + 1) * self.per_node - 1
            return f"ranks {lo}-{hi}" if hi > lo else f"rank {lo}"
        locs = ", ".join(map(str, self.locals_))
        return f"local rank{'s' if len(self.locals_) > 1 else ''} {locs} of {nodes}"

    def reports_per(self) -> str:
        """How the reports split: "one report per rank", "one report per node"."""
        if self.listed is None and len(self.locals_) == 1 and self.per_node > 1:
            return "one report per node"
        return f"one report per {'rank' if self.unit == 'rank' else self.unit}"


def _ranges(ids: list[int]) -> str:
    """0,1,2,5,7,8 -> "0-2, 5, 7-8"."""
    parts, start = [], None
    for i, value in enumerate(ids):
        if start is None:
            start = value
        if i + 1 == len(ids) or ids[i + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ", ".join(parts)


def expand_name(template: str, env: dict[str, str], host: str, pid: str) -> str:
    """nsys's -o placeholders: %q{VAR} (left as is when unset), %h, %p, %n, %%."""

    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        if match.group(1) is not None:
            return env.get(match.group(1), text)
        return {"%h": host, "%p": pid, "%n": "1", "%%": "%"}[text]

    return _PLACEHOLDER.sub(replace, template)


def report_path(report_dir: str, report_name: str | None, default_name: str) -> str:
    """The -o value: capture.report_name if set, else the target's default name, in report_dir."""
    return f"{report_dir}/{report_name or default_name}"
