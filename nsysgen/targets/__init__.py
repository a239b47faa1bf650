"""Targets: one module per scheduler, listed in one registry (nsysgen/targets/base.py)."""

from __future__ import annotations

from nsysgen.profile.plan_types import Lint
from nsysgen.targets import eks, slurm
from nsysgen.targets.base import Target

TARGETS: dict[str, Target] = {"eks": eks.TARGET, "slurm": slurm.TARGET}


def target_lints() -> tuple[Lint, ...]:
    """Every target's own lints (for the README's table of all lints)."""
    return tuple(lint for target in TARGETS.values() for lint in target.lints)
