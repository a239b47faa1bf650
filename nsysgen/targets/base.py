"""What a target is: the one protocol every scheduler nsysgen compiles for implements.

A target is one module (or package) under `nsysgen/targets/`, its templates under
`nsysgen/templates/<name>/`, `conf/target/<name>.yaml` and its block's schema; it is listed in
`nsysgen.targets.TARGETS`. The rest of nsysgen asks the target and never names one. A target
renders from the plan and imports nothing of nsysgen/profile/ but the plan's types
(nsysgen.profile.plan_types; tests/test_layers.py holds it to that).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from nsysgen.errors import Issue
from nsysgen.model import Block, Config, TargetSettings
from nsysgen.output.render import ArtifactSpec
from nsysgen.profile.plan_types import JobEnv, Lint, ProfilePlan, Scheduler


class Target(Scheduler, Protocol):
    """A scheduler nsysgen compiles for: what the plan asks of it (`Scheduler`), and its
    name, block, rules, lints and files."""

    @property
    def name(self) -> str:
        """The value of `target.name` (and of `conf/target/<name>.yaml`)."""

    @property
    def lints(self) -> tuple[Lint, ...]:
        """Lints only this target has (their IDs are in the one lint table)."""

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The JSON Schema of the `target` block, or None where schemas/target.schema.json
        holds its branch."""

    def settings(self, block: Block) -> TargetSettings:
        """The `target` block typed (a frozen dataclass of this target's own)."""

    def checks(self, config: Config, env: JobEnv) -> Iterator[Issue]:
        """Rules only this target has, reported like every other semantic problem (`env`: the
        job's environment, which they may check before a plan exists)."""

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        """The files of the compiled folder, from the config and its profile plan."""

    def inputs(self, config: Config) -> Mapping[str, str]:
        """Files of the user's that this target read to compile (path -> sha256): the manifest
        records them, and `nsysgen check` names one that changed as the cause."""

    def prerequisites(self, config: Config) -> tuple[tuple[str, str, str], ...]:
        """What must exist where the job runs before it starts: (what, the command that checks
        it, where it comes from); `plan` prints them and the folder's README lists them."""

    def unconfirmed(self, config: Config, plan: ProfilePlan) -> tuple[tuple[str, str], ...]:
        """What this setup relies on that no public source confirms: (what, how to check it,
        commands in backticks); `plan` prints them and the folder's README lists them."""

    def notes(self, config: Config, plan: ProfilePlan, folder: str) -> tuple[str, ...]:
        """Lines to print once the folder is written at `folder` (its absolute path there):
        what the user must do that no file of the folder can, e.g. change a job script of
        their own. Never written into the folder (the path is this machine's)."""
