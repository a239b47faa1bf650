"""The profile plan, what it asks of its target, and what a lint of it is.

The plan holds every fact a target renders from: the recorded tasks, the nsys command line, the
program, the step window, the teardown margin, the recipe runs (`Facts`); it is built once per
compile (nsysgen/profile/plan.py) and handed to the target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from nsysgen.model import Config, Severity
from nsysgen.profile.plan_types.facts import Facts, LaunchShell, Program
from nsysgen.profile.plan_types.ranks import RecordedRanks
from nsysgen.profile.plan_types.tasks import RecordedTask, RecordedTasks


@dataclass(frozen=True)
class SizeEstimate:
    bytes_per_report: int
    basis: str


@dataclass(frozen=True)
class SlowdownEstimate:
    rank_percent: float  # a recorded rank, outside the window
    job_percent: float  # the whole job: every rank, when the job is synchronous
    paid_by: str
    basis: str
    remedies: tuple[str, ...]


@dataclass(frozen=True)
class AnalysisJob:
    reports: int
    nodes: int
    workers_per_node: int
    worker_memory_gb: int
    time_limit_min: int
    estimate_s: float  # wall time of the analysis with these workers

    @property
    def workers(self) -> int:
        return self.nodes * self.workers_per_node


@dataclass(frozen=True)
class Teardown:
    """Time for nsys to write a report before the job is killed (nsysgen/profile/teardown.py)."""

    write_s: int  # seconds nsys needs to write one report of this setup
    early_signal: str | None  # Slurm's --signal value where the capture may reach the limit
    # Where Slurm may send that signal before the capture opens (a short time limit): None, or
    # the earliest moment it may come, when the capture opens, and the limit that avoids it.
    too_early: SignalTooEarly | None = None


@dataclass(frozen=True)
class SignalTooEarly:
    """Slurm sends --signal up to a minute before the time asked for (sbatch(1)); on a short
    time limit, that can be before the capture opens, and the report then holds nothing."""

    earliest_s: int  # the earliest moment after the start it may come (0: at once)
    opens_s: float  # when the capture is planned to open (0: not known before the run)
    limit_min: int  # the smallest job.time_limit_min that keeps it after the opening


@dataclass(frozen=True)
class ProfilePlan:
    world_size: int
    nodes: int
    tasks_per_node: int
    launch: str  # what one task is
    launch_brief: str  # the same in a few words (the job script's comment)
    recorded: RecordedTasks
    recorded_ranks: RecordedRanks  # what those tasks' reports hold, in ranks
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
    facts: Facts  # what the config implies whatever the target
    program: Program | None  # as the target's launch starts it (None: the target starts it)
    teardown: Teardown
    analysis: AnalysisJob  # the analysis job of the reports (analyze.sbatch)
    trace: tuple[str, ...]  # capture.trace as nsys gets it (cuda-sw, nccl)
    # capture=steps: how steps are found and numbered, (what, how) in words (else empty)
    steps: tuple[tuple[str, str], ...] = ()
    # The capture starts or stops while the program runs (capture.*, or the target's own
    # window): the pause at its edges, and no CUDA hardware trace on Blackwell.
    time_boxed: bool = False
    target_window: bool = False  # the target itself opens and closes it (Coordinator Mode)
    # Switches the target's injector sets itself (the Nsight Operator 26's --output, its
    # coordinator's window): planned and judged, but not in the command nsysgen hands over.
    owned_switches: tuple[str, ...] = ()
    # The program's command line where the target starts it itself (no launch shell).
    started: tuple[str, ...] = ()

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
        # The program as the launch starts it, arguments and all: what runs is what was declared.
        program = self.program.command if self.program is not None else self.started
        return ("nsys", "profile", *self.handed_over((*self.profile_args, *extra)), *program)


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

    def launch_shell(self, config: Config) -> LaunchShell | None:
        """What the program's launcher reads from the job at run time (None: the target starts
        the program itself, and the plan holds no `program`)."""

    def started_command(self, config: Config) -> tuple[str, ...]:
        """The program's command line as the process the target starts itself shows it (a
        target without a launch shell); () for the others."""

    def recorded(self, config: Config, facts: Facts) -> RecordedTasks | Iterable[RecordedTask]:
        """The tasks that record a report: as ranges and a name pattern (`RecordedTasks`, whose
        cost does not grow with the job), or, for small plug-ins, every task with its name."""

    def in_container(self, config: Config) -> bool:
        """Whether the program (and nsys) run in a container."""

    def opens_window(self, config: Config) -> bool:
        """Whether the target itself starts and stops the capture while the program runs (the
        Nsight Operator's Coordinator Mode), whatever capture.* says."""

    def owned_switches(self, config: Config) -> tuple[str, ...]:
        """nsys switches the target's injector sets itself, left out of what it is handed."""


@dataclass(frozen=True)
class Finding:
    lint: str
    severity: Severity
    path: str  # config path to change
    message: str
    fix: str


@dataclass(frozen=True)
class Lint:
    id: str
    title: str
    fix: str
    severity: Severity
    check: Callable[[Config, ProfilePlan], Iterator[tuple[str, str]]]  # (path, message)
