"""PyTorch FSDP (or any torchrun script): one torchrun per node, nsysgen's step helper."""

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
from nsysgen.profile.workloads.base import HELPER_STEPS, Defaults, helper_program, torchrun


@dataclass(frozen=True)
class FsdpSettings(ScriptSettings):
    rdzv_port: int


class Fsdp(Defaults):
    step_capture = True
    step_ranges: StepRanges | None = HELPER_STEPS
    uses_nccl = True
    pytorch_job = True
    launches: tuple[Launch, ...] = ("per_node",)  # one torchrun per node (the schema says so too)
    step_methods: tuple[str, ...] = ("hook", "patch")

    def settings(self, block: Block) -> WorkloadSettings:
        settings: FsdpSettings = typed_block(FsdpSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, FsdpSettings)
        command = (*torchrun(config, shell, s.rdzv_port), s.script, *s.args)
        return helper_program(command, steps, head_node=True)


WORKLOAD = Fsdp()
