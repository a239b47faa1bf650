"""Megatron-LM: one torchrun per node, its own step window (--profile) by default."""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.model import Block, Config, Launch, WorkloadSettings, settings_as, typed_block
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts, StepRanges
from nsysgen.profile.workloads.base import Defaults, NativeWindow, helper_program, torchrun


@dataclass(frozen=True)
class MegatronSettings(WorkloadSettings):
    script: str
    rdzv_port: int
    args: tuple[str, ...]


# Megatron-LM and Megatron Bridge: `iteration` (train_state.step) counts completed iterations
# and is incremented after the optimizer step; the log prints it incremented.
MEGATRON_NUMBERING = (
    "the iteration Megatron logs as `iteration N` (from 1); with step_method=hook the helper reads "
    "the same counter while the optimizer steps"
)
# Megatron's reports hold no range per iteration (its --nvtx-ranges are module ranges).
MEGATRON_STEPS = StepRanges(
    regex=r"(?!)",
    numbered=False,
    unopened="Megatron did not get its --profile arguments, or the rank is not in --profile-ranks",
    unmarked=(
        "Megatron marks no range per iteration: the window opened, which steps it holds is not "
        "checked (capture.step_method=hook marks and proves them)"
    ),
)


def native_window(
    config: Config, steps: StepFacts
) -> tuple[int, int, tuple[int, ...] | None] | None:
    """Megatron's (start, end, ranks) for steps FIRST..LAST as its log numbers iterations.

    Megatron-LM and Megatron Bridge call cudaProfilerStart at the top of the iteration that
    begins when `iteration == start` (completed iterations, before the increment), and
    cudaProfilerStop after the iteration where the incremented counter equals `end`; their log
    prints the incremented counter. So the iterations logged start+1..end are recorded:
    start = FIRST - 1, end = LAST. Ranks: every worker of a recorded node (one nsys per node
    records all of them); None when that is every rank (the framework's empty list).
    """
    if steps.method != "native":
        return None
    listed = None if steps.ranks == "all" else tuple(int(r) for r in steps.ranks.split(","))
    return config.setup.first_step - 1, config.setup.last_step, listed


class MegatronFamily(Defaults):
    """Megatron-LM and Megatron Bridge: one torchrun per node, their own window by default."""

    step_capture = True
    step_ranges: StepRanges | None = MEGATRON_STEPS
    uses_nccl = True
    launches: tuple[Launch, ...] = ("per_node",)
    step_methods: tuple[str, ...] = ("native", "hook")


class Megatron(MegatronFamily):
    native: NativeWindow | None = NativeWindow(
        "native (Megatron-LM's --profile --profile-step-start=FIRST-1 --profile-step-end=LAST "
        "--profile-ranks)",
        MEGATRON_NUMBERING,
        "iteration + 1",
        "training.py:train",
        first=1,
    )

    def settings(self, block: Block) -> WorkloadSettings:
        settings: MegatronSettings = typed_block(MegatronSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, MegatronSettings)
        command = (*torchrun(config, shell, s.rdzv_port), s.script, *s.args)
        return helper_program((*command, *megatron_args(config, steps)), steps, head_node=True)


def megatron_args(config: Config, steps: StepFacts) -> tuple[str, ...]:
    window = native_window(config, steps)
    if window is None:
        return ()
    start, end, ranks = window
    args = ["--profile", f"--profile-step-start={start}", f"--profile-step-end={end}"]
    if ranks is not None:
        # nargs="+": the ranks follow as separate words; Megatron core >= 0.17 records every
        # rank without the option, older releases rank 0 only.
        args += ["--profile-ranks", *map(str, ranks)]
    return tuple(args)


WORKLOAD = Megatron()
