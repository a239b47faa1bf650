"""What a workload plug-in is: the one Protocol every `workload.<kind>` implements.

A workload is one module of this package and one line of its registry
(nsysgen/profile/workloads/registry.py), `conf/workload/<kind>.yaml` and its block's schema.
Its module says how the block is typed, the program it runs, whether its steps can start and
stop the capture (cudaProfilerStart/Stop), whether its ranks talk through NCCL, which launch
shapes it supports. Nothing outside its module names the kind (the
EKS target runs torchrun jobs, and says so itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from nsysgen.errors import Issue
from nsysgen.model import AUTO_WINDOW_TRAINING, Block, Config, Launch, WorkloadSettings
from nsysgen.output.render import ShellExpr
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts, StepRanges

EVERY_LAUNCH: tuple[Launch, ...] = ("per_gpu", "per_node")


@dataclass(frozen=True)
class NativeWindow:
    """A framework that opens the step window itself, in words for plan and the README."""

    method: str  # how its window is asked for
    numbering: str  # what its step N is
    # The helper's counter in the framework's own loop (step_method=hook numbers as it logs).
    at_step: str | None = None
    scope: str = ""
    first: int = 0  # the first step it numbers (Megatron counts iterations from 1)


class Workload(Protocol):
    """A workload kind: its block, its program, and what it can do."""

    @property
    def step_capture(self) -> bool:
        """Its steps call cudaProfilerStart/Stop (capture=steps)."""

    @property
    def step_ranges(self) -> StepRanges | None:
        """How its reports show the steps (None: no step capture)."""

    @property
    def uses_nccl(self) -> bool:
        """Its ranks talk through NCCL (the python kind may or may not)."""

    @property
    def launches(self) -> tuple[Launch, ...]:
        """The launch shapes it supports."""

    @property
    def step_methods(self) -> tuple[str, ...]:
        """capture.step_method values it supports, its default first (none: no step capture)."""

    @property
    def native(self) -> NativeWindow | None:
        """The framework's own window (step_method=native)."""

    @property
    def native_ranges(self) -> StepRanges | None:
        """How its reports show the steps when it opens the window itself (None: as
        step_ranges)."""

    @property
    def runs_nccl_tests(self) -> bool:
        """Its program is nccl-tests: it times its own collectives and has no timeout to
        weigh (its other ranks only wait)."""

    @property
    def pytorch_job(self) -> bool:
        """Its program is one torchrun per node, the job Kubeflow's PyTorchJob and TrainJob
        start in each pod."""

    @property
    def auto_window(self) -> tuple[int, int]:
        """capture.delay and capture.duration when they are `auto` (seconds)."""

    def settings(self, block: Block) -> WorkloadSettings:
        """The `workload.<kind>` block typed (a frozen dataclass of its own)."""

    def checks(self, config: Config) -> Iterator[Issue]:
        """Its own rules over a schema-valid config (semantic errors, each with its path)."""

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        """The program as the target's launch starts it (`shell`: what it reads from the job)."""

    def files(self, config: Config, steps: StepFacts) -> tuple[str, ...]:
        """The files of the folder the program reads (the Program's, without building it)."""

    def overrides(self, config: Config) -> tuple[str, ...]:
        """The lines of its overrides file (nemo-overrides.txt), if it has one."""


class Defaults:
    """What most workloads have: no framework window, the step helper's files, no overrides
    file. A workload overrides what differs."""

    step_methods: tuple[str, ...] = ()
    native: NativeWindow | None = None
    native_ranges: StepRanges | None = None
    runs_nccl_tests = False
    pytorch_job = False
    # Training: skip its start-up, record a minute.
    auto_window: tuple[int, int] = AUTO_WINDOW_TRAINING

    def checks(self, config: Config) -> Iterator[Issue]:
        return iter(())

    def files(self, config: Config, steps: StepFacts) -> tuple[str, ...]:
        return steps.files

    def overrides(self, config: Config) -> tuple[str, ...]:
        return ()


# nsysgen's step helper and training-loop patch name each step's NVTX range "step N".
HELPER_STEPS = StepRanges(
    regex=r"step (\d+)",
    numbered=True,
    unopened="the step helper is not in the training loop, or NSYSGEN_PROFILE_* are not exported",
)


def torchrun(config: Config, shell: LaunchShell, port: int) -> tuple[str, ...]:
    """One torchrun per node, rendezvous on the job's head node."""
    return (
        "torchrun",
        f"--nproc_per_node={config.cluster.gpus_per_node}",
        ShellExpr(f"--nnodes={shell.nnodes}"),
        ShellExpr(f"--rdzv_id={shell.job_id}"),
        "--rdzv_backend=c10d",
        ShellExpr(f"--rdzv_endpoint={shell.head_node}:{port}"),
    )


def helper_program(command: tuple[str, ...], steps: StepFacts, head_node: bool) -> Program:
    """A program whose steps nsysgen's helper may mark: the step window's variables, the
    helper's folder on PYTHONPATH and its files go with it."""
    return Program(
        command=command,
        env=steps.env,
        needs_head_node=head_node,
        site=steps.site,
        files=steps.files,
    )


def window_ranks(config: Config) -> str:
    """The ranks that start and stop the capture, as the patched loop reads them.

    With one torchrun per node, one nsys session holds every worker of the node, and a
    cudaProfilerStart/Stop from any worker starts/stops the capture of all of them (measured on
    2 x H200: with rank 0 alone calling them, rank 1's steps were cut short). So every worker of
    a recorded node marks the window, and each of them is recorded exactly.
    """
    ranks = config.capture.ranks
    if not isinstance(ranks, tuple):
        return ranks if config.setup.per_gpu else "all"
    if config.setup.per_gpu:
        return ",".join(map(str, ranks))
    gpus = config.cluster.gpus_per_node
    nodes = sorted({rank // gpus for rank in ranks})
    if len(nodes) == config.cluster.nodes:
        return "all"
    return ",".join(str(node * gpus + local) for node in nodes for local in range(gpus))
