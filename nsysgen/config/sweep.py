"""Sweeps: Hydra's sweep grammar, plus paired sweeps, expanded into named points.

Hydra forms the Cartesian product of `key=a,b`, `range()`, `choice()`, `glob()` and group sweeps
(`cluster=p4de,p5`). nsysgen adds *paired* sweeps, which Hydra lacks: keys
joined by `+` take their values together, the values of one point joined by `:`:

    capture.delay+capture.duration=30:60,90:30     -> (30, 60) and (90, 30)
    capture.first_step+capture.last_step=10:14,40:44

A paired sweep is one more dimension of the product. Each point gets a readable folder name made
of the swept keys and values, e.g. `delay-30_duration-60`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from nsysgen.config.compose import Composer
from nsysgen.errors import ComposeError

_PAIRED = re.compile(r"^(?P<keys>[A-Za-z_][\w./-]*(?:\+[A-Za-z_][\w./-]*)+)=(?P<values>.*)$")
_UNSAFE = re.compile(r"[^a-z0-9.]+")


@dataclass(frozen=True)
class SweepPoint:
    overrides: tuple[str, ...]
    swept: tuple[tuple[str, str], ...]  # (key, value) of every swept dimension

    def slug(self) -> str:
        """A stable, shell-safe folder name from the swept keys and values."""
        shorts = [key.lstrip("+~").split(".")[-1].split("/")[-1] for key, _ in self.swept]
        parts = []
        for (key, value), short in zip(self.swept, shorts, strict=True):
            name = short if shorts.count(short) == 1 else key.lstrip("+~")
            parts.append(f"{_clean(name)}-{_clean(value)}")
        return "_".join(parts) or "default"


def _clean(text: str) -> str:
    return _UNSAFE.sub("-", text.lower()).strip("-") or "x"


def _paired_dimension(text: str) -> list[list[tuple[str, str]]]:
    match = _PAIRED.match(text)
    assert match
    keys = match["keys"].split("+")
    points = []
    for item in match["values"].split(","):
        values = item.split(":")
        if len(values) != len(keys):
            raise ComposeError(
                f"{text}: each point of a paired sweep needs {len(keys)} values joined by ':' "
                f"(got {item!r}); e.g. {'+'.join(keys)}={':'.join(['V'] * len(keys))},..."
            )
        points.append(list(zip(keys, values, strict=True)))
    return points


def _refuse_repeated_keys(composer: Composer, plain: Sequence[str], paired: Sequence[str]) -> None:
    """A key given twice in a sweep (`capture.delay=30,60 capture.delay=90`): Hydra keeps the
    last and the sweep silently loses a dimension."""
    given: dict[str, list[str]] = {}
    for text in plain:
        for override in composer.parse([text]):
            given.setdefault(override.get_key_element().lstrip("+~"), []).append(text)
    for text in paired:
        match = _PAIRED.match(text)
        assert match
        for key in match["keys"].split("+"):
            given.setdefault(key.lstrip("+~"), []).append(text)
    for key, texts in given.items():
        if len(texts) > 1:
            raise ComposeError(
                f"{key} is given {len(texts)} times ({' and '.join(texts)}): a sweep takes each "
                f"key once (allowed: every value in one override, e.g. {key}=A,B,C)"
            )


@dataclass(frozen=True)
class Sweep:
    fixed: tuple[str, ...]  # the arguments that are not swept
    points: tuple[SweepPoint, ...]


def expand(composer: Composer, args: Sequence[str]) -> Sweep:
    """Every point of a sweep, in a stable order (Hydra's order, then paired dimensions)."""
    paired = [a for a in args if _PAIRED.match(a)]
    plain = [a for a in args if not _PAIRED.match(a)]
    _refuse_repeated_keys(composer, plain, paired)
    grid = composer.sweep_grid(plain)
    swept_keys, batches = grid.swept_keys, grid.points
    dimensions = [_paired_dimension(a) for a in paired]
    points = []
    for batch in batches:
        for pairs in itertools.product(*dimensions):
            swept = [
                (key, item.split("=", 1)[1])
                for item in batch
                for key in swept_keys
                if item.startswith(f"{key}=")
            ]
            overrides = list(batch)
            for pair in pairs:
                overrides += [f"{key}={value}" for key, value in pair]
                swept += pair
            points.append(SweepPoint(tuple(overrides), tuple(swept)))
    slugs = [p.slug() for p in points]
    duplicates = sorted({s for s in slugs if slugs.count(s) > 1})
    if duplicates:
        raise ComposeError(f"sweep points share folder names: {', '.join(duplicates)}")
    return Sweep(fixed=grid.fixed, points=tuple(points))
