"""Megatron Bridge (NeMo Framework 26.x): a recipe script, Megatron's own step window."""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.model import Block, Config, WorkloadSettings, settings_as, typed_block
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts
from nsysgen.profile.workloads.base import NativeWindow, helper_program, torchrun
from nsysgen.profile.workloads.megatron import MEGATRON_NUMBERING, MegatronFamily, native_window


@dataclass(frozen=True)
class BridgeSettings(WorkloadSettings):
    script: str
    recipe: str
    rdzv_port: int
    overrides: tuple[str, ...]


def bridge_overrides(config: Config, steps: StepFacts) -> tuple[str, ...]:
    window = native_window(config, steps)
    if window is None:
        return ()
    start, end, ranks = window
    listed = ",".join(map(str, ranks)) if ranks is not None else ""
    return (
        "profiling.use_nsys_profiler=true",
        f"profiling.profile_step_start={start}",
        f"profiling.profile_step_end={end}",
        # Megatron Bridge >= 0.5 (NeMo Framework 26.06): an empty list records every rank.
        f"profiling.profile_ranks=[{listed}]",
    )


class Bridge(MegatronFamily):
    native: NativeWindow | None = NativeWindow(
        "native (Megatron Bridge's profiling.use_nsys_profiler=true, "
        "profiling.profile_step_start=FIRST-1, profiling.profile_step_end=LAST, "
        "profiling.profile_ranks)",
        MEGATRON_NUMBERING,
        "train_state.step + 1",
        "train.py:train",
        first=1,
    )

    def settings(self, block: Block) -> WorkloadSettings:
        settings: BridgeSettings = typed_block(BridgeSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, BridgeSettings)
        command = (
            *torchrun(config, shell, s.rdzv_port),
            s.script,
            f"--recipe={s.recipe}",
            *s.overrides,
            *bridge_overrides(config, steps),
        )
        return helper_program(command, steps, head_node=True)


WORKLOAD = Bridge()
