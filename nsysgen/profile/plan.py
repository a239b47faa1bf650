"""What a profile will do, before the job runs: the facts `nsysgen plan` shows and lints check.

Everything here is computed from the config, with the same code the artifacts are rendered from:
the target (nsysgen/targets/) says which tasks record (a rank, or a node with one torchrun per
node, or a pod) and what their reports are named. The recorded tasks are kept as ranges and a
name pattern (`RecordedTasks`), never as a list of every rank, so the cost of a plan and of every
lint does not grow with the job: 100,000 nodes cost what 2 do. Names are expanded on request.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from nsysgen.model import Config
from nsysgen.profile import cuda_trace, nsys_cmd
from nsysgen.profile.environment import job_env
from nsysgen.profile.estimate import (
    SizeEstimate,
    calibration,
    estimate_report_size,
    gpus_per_report,
)
from nsysgen.profile.overhead import SlowdownEstimate, estimate_slowdown
from nsysgen.profile.workloads import step_detection
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
    def from_tasks(cls, tasks: Iterable[RecordedTask], per_node: int) -> RecordedTasks:
        """A set of tasks a plug-in target enumerated itself (kept as a list)."""
        items = list(tasks)
        names = {(t.task, t.node, t.local): t for t in items}
        return cls(
            per_node,
            "rank" if per_node > 1 else "node",
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


@dataclass(frozen=True)
class ProfilePlan:
    world_size: int
    nodes: int
    tasks_per_node: int
    launch: str  # what one task is
    recorded: RecordedTasks
    profile_args: tuple[str, ...]  # of a recorded task without collectors
    collector_args: tuple[str, ...]
    env_vars: frozenset[str]  # the variables a task's environment holds
    misleading_vars: tuple[tuple[str, str], ...]  # set, but must not name a report: (name, why)
    in_container: bool  # the program and nsys run in a container
    window: str
    window_end_s: float | None  # seconds after launch, when known
    time_limit_s: int
    size: SizeEstimate
    slowdown: SlowdownEstimate  # outside the window (nsysgen/profile/overhead.py)
    total_bytes: int  # of every report, with the GPU-metrics data where a collector runs
    # capture=steps: how steps are found and numbered, (what, how) in words (else empty)
    steps: tuple[tuple[str, str], ...] = ()
    # The capture starts or stops while the program runs (capture.*, or the target's own
    # window): the pause at its edges, and no CUDA hardware trace on Blackwell.
    time_boxed: bool = False
    target_window: bool = False  # the target itself opens and closes it (Coordinator Mode)
    # Switches the target's injector sets itself (the Nsight Operator 26's --output, its
    # coordinator's window): planned and judged, but not in the command nsysgen hands over.
    owned_switches: tuple[str, ...] = ()

    @property
    def reports(self) -> int:
        return len(self.recorded)

    def handed_over(self, args: tuple[str, ...]) -> tuple[str, ...]:
        """`args` less the switches the target's injector owns."""
        return tuple(a for a in args if a.split("=")[0] not in self.owned_switches)

    @property
    def nsys_command(self) -> tuple[str, ...]:
        """The nsys command line of the first recorded task (with its collectors, if any), as
        the task runs it."""
        first = self.recorded[0] if len(self.recorded) else None
        extra = self.collector_args if first and first.collectors else ()
        return ("nsys", "profile", *self.handed_over((*self.profile_args, *extra)), "<program>")


def expand_name(template: str, env: dict[str, str], host: str, pid: str) -> str:
    """nsys's -o placeholders: %q{VAR} (left as is when unset), %h, %p, %n, %%."""

    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        if match.group(1) is not None:
            return env.get(match.group(1), text)
        return {"%h": host, "%p": pid, "%n": "1", "%%": "%"}[text]

    return _PLACEHOLDER.sub(replace, template)


def window_end(config: Config) -> float | None:
    """Seconds after launch at which the capture ends, where the config fixes it: a window's
    delay + duration, a step window's (last_step + 1) x workload.estimate.step_seconds; None
    when it ends with the program or with an NVTX range. The one place this is computed."""
    capture = config.capture
    if capture.mode == "window":
        return float(capture.delay_s + capture.duration) if capture.duration else None
    if capture.mode == "steps":
        return ((capture.last_step or 0) + 1) * config.workload.step_seconds
    return None


def _window(config: Config) -> tuple[str, float | None]:
    capture, end = config.capture, window_end(config)
    if capture.mode == "window":
        if end is not None:
            return f"from {capture.delay_s} s to {end:.0f} s after launch", end
        return f"from {capture.delay_s} s after launch to the end of the program", None
    if capture.mode == "steps" and end is not None:
        first, last = capture.first_step or 0, capture.last_step or 0
        step = config.workload.step_seconds
        return (
            f"training steps {first}..{last} (about {first * step:.0f} s to {end:.0f} s "
            f"after the loop starts, at workload.estimate.step_seconds={step})",
            end,
        )
    domain = f"@{capture.nvtx_domain}" if capture.nvtx_domain else ""
    return f"the first NVTX range {capture.nvtx_range}{domain}", None


class Scheduler(Protocol):
    """What a plan asks of its target (nsysgen.targets.base.Target has all of it)."""

    @property
    def unit(self) -> str:
        """What one launched task of a node is called in texts: "task", "pod"."""

    @property
    def variables(self) -> frozenset[str]:
        """The environment variables the scheduler sets in every task (for %q{VAR} names)."""

    @property
    def misleading_variables(self) -> Mapping[str, str]:
        """Variables it sets that must not name a report: name -> why, and what to use."""

    def tasks_per_node(self, config: Config) -> int:
        """Tasks (ranks, torchruns, pods) launched on each node."""

    def report_output(self, config: Config) -> str:
        """The nsys -o value of a recorded task, with the placeholders nsys or the target fill."""

    def recorded(self, config: Config) -> RecordedTasks | Iterable[RecordedTask]:
        """The tasks that record a report: as ranges and a name pattern (`RecordedTasks`, whose
        cost does not grow with the job), or, for small plug-ins, every task with its name."""

    def in_container(self, config: Config) -> bool:
        """Whether the program (and nsys) run in a container."""

    def opens_window(self, config: Config) -> bool:
        """Whether the target itself starts and stops the capture while the program runs (the
        Nsight Operator's Coordinator Mode), whatever capture.* says."""

    def owned_switches(self, config: Config) -> tuple[str, ...]:
        """nsys switches the target's injector sets itself, left out of what it is handed."""


def build_plan(config: Config, target: Scheduler) -> ProfilePlan:
    """The plan of a config on its target; computed once per compile and handed to the target."""
    found = target.recorded(config)
    per_node = target.tasks_per_node(config)
    recorded = (
        found if isinstance(found, RecordedTasks) else RecordedTasks.from_tasks(found, per_node)
    )
    window, window_end = _window(config)
    env_vars = target.variables | job_env(config).names()
    if config.workload.launch == "per_gpu":
        launch = f"one task per GPU: {per_node} tasks per node, a task is a global rank"
    else:
        launch = (
            f"one torchrun per node: 1 {target.unit} per node driving "
            f"{config.cluster.gpus_per_node} GPUs; a report covers the whole node"
        )
    target_window = target.opens_window(config)
    boxed = cuda_trace.time_boxed(config.capture) or target_window
    profile = nsys_cmd.profile_args(config, output=target.report_output(config), boxed=boxed)
    size = estimate_report_size(config)
    # The GPU-metrics data only counts where a collector runs.
    gpu_metrics = calibration()["gpu_metrics_bytes"] if config.capture.gpu_metrics else 0
    extra = gpu_metrics * recorded.collector_count
    return ProfilePlan(
        world_size=config.cluster.world_size,
        nodes=config.cluster.nodes,
        tasks_per_node=per_node,
        launch=launch,
        recorded=recorded,
        profile_args=tuple(profile),
        collector_args=tuple(nsys_cmd.collector_args(config)),
        env_vars=frozenset(env_vars),
        misleading_vars=tuple(sorted(target.misleading_variables.items())),
        in_container=target.in_container(config),
        window=window,
        window_end_s=window_end,
        time_limit_s=config.job.time_limit_min * 60,
        size=size,
        total_bytes=round(size.bytes_per_report * len(recorded) + extra),
        slowdown=estimate_slowdown(
            kernels_per_second=config.workload.kernels_per_second,
            traces_cuda=any(t.startswith("cuda") for t in config.capture.trace),
            recorded=len(recorded) * gpus_per_report(config),
            world_size=config.cluster.world_size,
        ),
        steps=step_detection(config),
        time_boxed=boxed,
        target_window=target_window,
        owned_switches=target.owned_switches(config),
    )
