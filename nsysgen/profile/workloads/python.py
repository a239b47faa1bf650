"""A Python script run by an interpreter, one per task: nsysgen's step helper."""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.model import (
    Block,
    Config,
    Launch,
    ScriptSettings,
    WorkloadSettings,
    settings_as,
    typed_block,
)
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts, StepRanges
from nsysgen.profile.workloads.base import EVERY_LAUNCH, HELPER_STEPS, Defaults, helper_program


@dataclass(frozen=True)
class PythonSettings(ScriptSettings):
    interpreter: str


class Python(Defaults):
    step_capture = True
    step_ranges: StepRanges | None = HELPER_STEPS
    uses_nccl = False
    launches: tuple[Launch, ...] = EVERY_LAUNCH
    step_methods: tuple[str, ...] = ("hook", "patch")

    def settings(self, block: Block) -> WorkloadSettings:
        settings: PythonSettings = typed_block(PythonSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, PythonSettings)
        return helper_program((s.interpreter, s.script, *s.args), steps, head_node=False)


WORKLOAD = Python()
