"""Targets: one module per scheduler, listed in one registry (nsysgen/targets/base.py)."""

from __future__ import annotations

from nsysgen.targets import eks, slurm
from nsysgen.targets.base import Target

TARGETS: dict[str, Target] = {"eks": eks.TARGET, "slurm": slurm.TARGET}
