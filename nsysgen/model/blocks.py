"""The `workload.<kind>` and `target` blocks as their plug-ins type them: the base classes each
plug-in's frozen settings dataclass derives from, and the conversion of a schema-valid block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

Block = Mapping[str, Any]


@dataclass(frozen=True)
class WorkloadSettings:
    """The `workload.<kind>` block; each kind subclasses it (nsysgen/profile/workloads/)."""


@dataclass(frozen=True)
class TargetSettings:
    """The `target` block less its name; each target subclasses it (nsysgen/targets/)."""


_S = TypeVar("_S", bound=WorkloadSettings | TargetSettings)


def settings_as(settings: WorkloadSettings | TargetSettings, kind: type[_S]) -> _S:
    """The settings of a block as the plug-in that reads them types them."""
    if not isinstance(settings, kind):
        raise TypeError(f"{type(settings).__name__} settings read as {kind.__name__}")
    return settings


def typed_block(kind: type[Any], block: Block) -> Any:
    """A frozen settings dataclass from its schema-valid block (lists become tuples)."""
    values = {}
    for item in fields(kind):
        # A key that may be null may be left out (a --config-dir file older than the key).
        optional = isinstance(item.type, str) and item.type.endswith("| None")
        value = block.get(item.name) if optional else block[item.name]
        values[item.name] = tuple(value) if isinstance(value, list) else value
    return kind(**values)
