"""nccl-tests: a collective benchmark binary, one GPU a process."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nsysgen.errors import Issue
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


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_bytes(text: str) -> int:
    """nccl-tests' size syntax: a count with an optional K, M, G or T (powers of 1024)."""
    unit = text[-1] if text[-1] in _UNITS else ""
    return int(text.removesuffix(unit)) * _UNITS[unit]


class Nccl(Defaults):
    step_capture = False
    runs_nccl_tests = True
    # A benchmark runs for seconds: its window opens at once and lasts to its end.
    auto_window = (2, 0)
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
            nccl_tests_log=True,
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
            ),
        )

    def files(self, config: Config, steps: StepFacts) -> tuple[str, ...]:
        return ()

    def checks(self, config: Config) -> Iterator[Issue]:
        settings = settings_as(config.workload.settings, NcclSettings)
        low, high = size_bytes(settings.min_bytes), size_bytes(settings.max_bytes)
        if low > high:
            yield Issue(
                "workload.nccl.min_bytes",
                f"{settings.min_bytes} is more than workload.nccl.max_bytes "
                f"{settings.max_bytes}: nccl-tests would run no size (allowed: min_bytes <= "
                "max_bytes)",
            )


WORKLOAD = Nccl()
