"""The target protocol (nsysgen/targets/base.py) against the registered targets: each has every
member the protocol (and the plan's Scheduler under it) names, its methods take the parameters
the protocol names, in order, so that the pipeline can call any target the same way."""

from __future__ import annotations

import inspect

import pytest

from nsysgen.targets import TARGETS
from nsysgen.targets.base import Target

MEMBERS = sorted(name for name in dir(Target) if not name.startswith("_"))


def test_the_protocol_names_the_targets_job() -> None:
    assert {"name", "lints", "schema", "settings", "checks", "artifacts", "inputs",
            "prerequisites", "notes", "unit", "variables"} <= set(MEMBERS)  # fmt: skip


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_target_has_every_member_with_the_protocols_parameters(name: str) -> None:
    target = TARGETS[name]
    for member in MEMBERS:
        declared = inspect.getattr_static(Target, member)
        assert hasattr(target, member), f"{name} lacks {member}"
        if isinstance(declared, property) or not callable(declared):
            continue
        implemented = getattr(target, member)
        assert callable(implemented), f"{name}.{member} is not a method"
        expected = list(inspect.signature(declared).parameters)[1:]  # without self
        assert list(inspect.signature(implemented).parameters) == expected, f"{name}.{member}"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_each_targets_properties_have_the_declared_kinds(name: str) -> None:
    target = TARGETS[name]
    assert isinstance(target.name, str) and isinstance(target.unit, str)
    assert isinstance(target.lints, tuple) and all(
        lint.id.startswith("NSG") for lint in target.lints
    )
    assert target.schema is None or isinstance(target.schema, dict)
    assert isinstance(target.variables, frozenset)
