"""Any program and its arguments, as the user's job runs it: the helper reaches its Python
processes, or the program opens the window itself."""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.model import (
    Block,
    Config,
    Launch,
    SourceSettings,
    WorkloadSettings,
    settings_as,
    typed_block,
)
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts, StepRanges
from nsysgen.profile.workloads.base import (
    EVERY_LAUNCH,
    HELPER_STEPS,
    Defaults,
    NativeWindow,
    helper_program,
)


@dataclass(frozen=True)
class CommandSettings(SourceSettings):
    """Any program and its arguments: a launcher (torchrun, deepspeed, mpirun), a shell
    script, a binary, as the user's job runs it; `source` the training script it runs, whose
    counter numbers the steps (read, never patched: the command is the user's)."""

    argv: tuple[str, ...]


# A program that opens its own cudaProfilerApi window: nsysgen cannot tell its steps.
PROGRAM_STEPS = StepRanges(
    regex=r"(?!)",
    numbered=False,
    unopened="the program never called cudaProfilerStart (cudaProfilerApi window)",
    unmarked=(
        "the program opens and closes the window itself and marks no steps nsysgen knows: the "
        "window opened, which steps it holds is not checked"
    ),
)


class Command(Defaults):
    step_capture = True
    step_ranges: StepRanges | None = HELPER_STEPS
    uses_nccl = False
    launches: tuple[Launch, ...] = EVERY_LAUNCH
    # hook: the helper reaches every Python process the command starts (torchrun's and
    # deepspeed's workers, a script a shell launcher execs); native: the program calls
    # cudaProfilerStart/Stop itself.
    step_methods: tuple[str, ...] = ("hook", "native")
    native: NativeWindow | None = NativeWindow(
        "native (the program calls cudaProfilerStart and cudaProfilerStop itself)",
        "the program's own (capture.first_step/last_step only size the plan)",
    )
    native_ranges: StepRanges | None = PROGRAM_STEPS

    def settings(self, block: Block) -> WorkloadSettings:
        settings: CommandSettings = typed_block(CommandSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, CommandSettings)
        return helper_program(s.argv, steps, head_node=False)


WORKLOAD = Command()
