"""NeMo 1.x: a Hydra script that opens the step window itself (model.nsys_profile)."""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.model import Block, Config, Launch, WorkloadSettings, settings_as, typed_block
from nsysgen.output.render import ShellExpr
from nsysgen.profile.plan_types import (
    NEMO_OVERRIDES_FILE,
    LaunchShell,
    Program,
    StepFacts,
    StepRanges,
)
from nsysgen.profile.ranks import explicit_ranks
from nsysgen.profile.workloads.base import EVERY_LAUNCH, Defaults, NativeWindow


@dataclass(frozen=True)
class NemoSettings(WorkloadSettings):
    script: str
    config_path: str
    config_name: str
    overrides: tuple[str, ...]


# NeMo opens and closes the window itself (model.nsys_profile). Its steps have no NVTX range of
# their own; with gen_shape=true it turns on torch's emit_nvtx, and then every optimizer step is
# a range "Optimizer.step#<optimizer>.step, op_id = N" (seen with nsys 2025.3.1, torch 2.11).
NEMO_STEPS = StepRanges(
    regex=r"Optimizer\.step#[^,]*(?:, .*)?",
    numbered=False,
    unopened="NeMo did not get its model.nsys_profile overrides (nemo-overrides.txt)",
    unmarked=(
        "NeMo marks its steps only with model.nsys_profile.gen_shape=true (torch emit_nvtx): "
        "the window opened, which steps it holds is not checked"
    ),
)


class Nemo(Defaults):
    step_capture = True
    step_ranges: StepRanges | None = NEMO_STEPS
    uses_nccl = True
    launches: tuple[Launch, ...] = EVERY_LAUNCH
    step_methods: tuple[str, ...] = ("native",)
    native: NativeWindow | None = NativeWindow(
        "native (NeMo 1.x model.nsys_profile.* overrides in nemo-overrides.txt)",
        "NeMo's trainer.global_step (optimizer steps taken, from 0)",
    )

    def settings(self, block: Block) -> WorkloadSettings:
        settings: NemoSettings = typed_block(NemoSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, NemoSettings)
        return Program(
            command=(
                "python3",
                "-u",
                s.script,
                f"--config-path={s.config_path}",
                f"--config-name={s.config_name}",
                ShellExpr("${nemo_overrides[@]}"),
            ),
            files=self.files(config, steps),
        )

    def files(self, config: Config, steps: StepFacts) -> tuple[str, ...]:
        return (NEMO_OVERRIDES_FILE,)

    def overrides(self, config: Config) -> tuple[str, ...]:
        """NeMo 1.x Hydra overrides: the workload's own, then model.nsys_profile for the
        window."""
        overrides = list(settings_as(config.workload.settings, NemoSettings).overrides)
        capture = config.capture
        if capture.mode == "steps":
            ranks = ",".join(map(str, explicit_ranks(config)))
            overrides += [
                "model.nsys_profile.enabled=true",
                f"model.nsys_profile.start_step={config.setup.first_step}",
                f"model.nsys_profile.end_step={config.setup.last_step}",
                f"model.nsys_profile.ranks=[{ranks}]",
                "model.nsys_profile.gen_shape=false",
            ]
        else:
            # The window comes from nsys itself (delay/duration or NVTX), not from NeMo's
            # callback.
            overrides.append("model.nsys_profile.enabled=false")
        return tuple(overrides)


WORKLOAD = Nemo()
