"""nccl-tests: a collective benchmark binary, one GPU a process."""

from __future__ import annotations

from dataclasses import dataclass

from nsysgen.model import Block, Config, Launch, WorkloadSettings, settings_as, typed_block
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts, StepRanges
from nsysgen.profile.workloads.base import Defaults


@dataclass(frozen=True)
class NcclSettings(WorkloadSettings):
    binary: str
    build_dir: str
    min_bytes: str
    max_bytes: str
    step_factor: int
    iterations: int
    check: int


class Nccl(Defaults):
    step_capture = False
    step_ranges: StepRanges | None = None
    uses_nccl = True
    # The program runs one GPU a process (-g 1): one task a node would leave 7 of 8 idle.
    launches: tuple[Launch, ...] = ("per_gpu",)

    def settings(self, block: Block) -> WorkloadSettings:
        settings: NcclSettings = typed_block(NcclSettings, block)
        return settings

    def program(self, config: Config, shell: LaunchShell, steps: StepFacts) -> Program:
        s = settings_as(config.workload.settings, NcclSettings)
        return Program(
            command=(
                f"{s.build_dir}/{s.binary}",
                "-b",
                s.min_bytes,
                "-e",
                s.max_bytes,
                "-f",
                str(s.step_factor),
                # One GPU per task: the launch starts one task per GPU.
                "-g",
                "1",
                "-c",
                str(s.check),
                "-n",
                str(s.iterations),
            )
        )

    def files(self, config: Config, steps: StepFacts) -> tuple[str, ...]:
        return ()


WORKLOAD = Nccl()
