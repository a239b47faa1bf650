"""The plug-ins' blocks typed (nsysgen/model/blocks.py): a schema-valid block becomes the
plug-in's frozen dataclass, lists as tuples and an optional key left out as None, and settings
are read only as the type they are."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from nsysgen.model.blocks import TargetSettings, WorkloadSettings, settings_as, typed_block


@dataclass(frozen=True)
class Demo(WorkloadSettings):
    args: tuple[str, ...]
    source: str | None


def test_a_block_becomes_its_dataclass() -> None:
    typed = typed_block(Demo, {"args": ["--a", "--b"]})
    assert typed == Demo(("--a", "--b"), None)  # a key that may be null may be left out
    with pytest.raises(KeyError):
        typed_block(Demo, {"source": "t.py"})  # one that may not, may not


def test_settings_are_read_as_the_type_they_are() -> None:
    typed = Demo((), None)
    assert settings_as(typed, Demo) is typed
    with pytest.raises(TypeError, match="Demo settings read as TargetSettings"):
        settings_as(typed, TargetSettings)
