"""Configs and plans for the unit tests of nsysgen/profile/: the packaged conf/ with overrides,
composed, typed and planned in this process, without the CLI."""

from __future__ import annotations

from functools import cache

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config, typed
from nsysgen.model import Config
from nsysgen.profile.plan_types import ProfilePlan


@cache
def composer() -> Composer:
    """One composer for every test of a process: it keeps each group choice composed."""
    return Composer()


def config(*overrides: str) -> Config:
    """The typed config of `overrides`, unchecked: no semantic rule or lint runs."""
    return typed(composer().compose(list(overrides)).data)


def planned(*overrides: str) -> tuple[Config, ProfilePlan]:
    """The config of `overrides` and its plan, as a compile builds them; lint errors do not
    stop it (the lint under test judges the plan)."""
    checked, plan, _ = build_config(composer().compose(list(overrides)), stop_on_lint_errors=False)
    return checked, plan
