"""What a target is: the one protocol every scheduler nsysgen compiles for implements.

A target is one module (or package) under `nsysgen/targets/`, its templates under
`nsysgen/templates/<name>/`, `conf/target/<name>.yaml` and its block's schema; it is listed in
`nsysgen.targets.TARGETS`. The rest of nsysgen asks the target and never names one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nsysgen.errors import Issue
    from nsysgen.model import Block, Config, TargetSettings
    from nsysgen.output.render import ArtifactSpec
    from nsysgen.profile.lints import Lint
    from nsysgen.profile.plan import ProfilePlan, RecordedTask, RecordedTasks


class Target(Protocol):
    @property
    def name(self) -> str:
        """The value of `target.name` (and of `conf/target/<name>.yaml`)."""

    @property
    def unit(self) -> str:
        """What one launched task of a node is called in texts: "task", "pod"."""

    @property
    def variables(self) -> frozenset[str]:
        """The environment variables the scheduler sets in every task (for %q{VAR} names)."""

    @property
    def misleading_variables(self) -> Mapping[str, str]:
        """Variables it sets that must not name a report: name -> why, and what to use."""

    @property
    def lints(self) -> tuple[Lint, ...]:
        """Lints only this target has (their IDs are in the one lint table)."""

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The JSON Schema of the `target` block, or None where schemas/target.schema.json
        holds its branch."""

    def settings(self, block: Block) -> TargetSettings:
        """The `target` block typed (a frozen dataclass of this target's own)."""

    def tasks_per_node(self, config: Config) -> int:
        """Tasks (ranks, torchruns, pods) launched on each node."""

    def report_output(self, config: Config) -> str:
        """The nsys -o value of a recorded task, with the placeholders nsys or the target fill."""

    def recorded(self, config: Config) -> RecordedTasks | Iterable[RecordedTask]:
        """The tasks that record a report: as ranges and a name pattern (`RecordedTasks`, whose
        cost does not grow with the job), or, for small plug-ins, every task with its name."""

    def in_container(self, config: Config) -> bool:
        """Whether the program (and nsys) run in a container."""

    def checks(self, config: Config) -> Iterator[Issue]:
        """Rules only this target has, reported like every other semantic problem."""

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        """The files of the compiled folder, from the config and its profile plan."""
