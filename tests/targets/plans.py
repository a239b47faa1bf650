"""The compiled config and plan of overrides, for the unit tests of nsysgen/targets/: composed
by one module-wide Composer (the `composer` fixture of tests/targets/conftest.py), checked and
planned as a compile does, lint errors not stopping it (a target's own checks are under test)."""

from __future__ import annotations

from nsysgen.config.compose import Composer
from nsysgen.model import Config
from nsysgen.pipeline import build_config
from nsysgen.profile.plan_types import ProfilePlan


def built(composer: Composer, *overrides: str) -> tuple[Config, ProfilePlan]:
    config, plan, _ = build_config(composer.compose(list(overrides)), stop_on_lint_errors=False)
    return config, plan
