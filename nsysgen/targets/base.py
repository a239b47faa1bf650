"""What a target provides: the files of one compiled config."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from nsysgen.errors import Issue
from nsysgen.model import Config
from nsysgen.render import ArtifactSpec


@dataclass(frozen=True)
class Target:
    name: str
    plan: Callable[[Config], list[ArtifactSpec]]
    # Rules only this target has, reported like every other semantic problem.
    checks: Callable[[Config], Iterator[Issue]] = lambda _config: iter(())
