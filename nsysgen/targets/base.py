"""What a target provides: the files of one compiled config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nsysgen.model import Config
from nsysgen.render import ArtifactSpec


@dataclass(frozen=True)
class Target:
    name: str
    plan: Callable[[Config], list[ArtifactSpec]]
