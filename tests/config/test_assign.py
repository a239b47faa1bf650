"""Overrides assigned onto a composed base (nsysgen/config/assign.py): values set at dotted keys
and resolved, a key under a scalar refused naming the scalar, and an interpolation of a missing
key reported at the key the user typed, with a close key and the file that set it."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from nsysgen.config.assign import (
    assign_and_resolve,
    assign_and_resolve_with_omegaconf,
    first_paragraph,
    references,
)
from nsysgen.config.interpolate import Unsupported
from nsysgen.errors import ComposeError

FIX = "; fix: ${...} names a key of the config (nsysgen show lists them)"


def test_references_name_each_interpolated_key_once_in_order() -> None:
    data = {"a": {"b": "${c.d}-${e}-${c.d}"}, "f": "x", "g": "$5", "h": 3}
    assert references(data) == {"a.b": ("c.d", "e")}


def test_assignments_are_set_then_resolved_without_touching_the_base() -> None:
    base = {"a": {"b": 1}, "c": "${a.b}"}
    assert assign_and_resolve(base, [("a.b", 5), ("x.y", "z")]) == {
        "a": {"b": 5},
        "c": 5,
        "x": {"y": "z"},
    }
    assert base == {"a": {"b": 1}, "c": "${a.b}"}


def test_a_key_under_a_scalar_is_refused_and_an_interpolated_value_deferred() -> None:
    with pytest.raises(ComposeError) as raised:
        assign_and_resolve({"a": {"b": 1}}, [("a.b.c.d", 5)])
    assert str(raised.value) == "a.b.c.d=5: a.b is not a mapping, so it has no key c.d"
    with pytest.raises(Unsupported):  # left to OmegaConf
        assign_and_resolve({"a": {"b": 1}}, [("a.c", "${a.b}")])


def test_omegaconf_resolves_what_the_own_resolver_defers() -> None:
    base = OmegaConf.create({"a": 1, "b": "${a}"})
    assert assign_and_resolve_with_omegaconf(base, [("c", "${b}")], {}) == {"a": 1, "b": 1, "c": 1}


def test_a_missing_reference_is_reported_at_the_key_the_user_typed() -> None:
    base = OmegaConf.create({"job": {"name": "j"}, "capture": {"report_dir": "/fsx/${job.nme}"}})
    with pytest.raises(ComposeError) as raised:
        assign_and_resolve_with_omegaconf(base, [], {"capture": "/u/capture/mine.yaml"})
    assert str(raised.value) == (
        "capture.report_dir: refers to job.nme, which the config does not have (did you mean "
        "job.name?) [in /u/capture/mine.yaml]" + FIX
    )
    with pytest.raises(ComposeError) as raised:
        assign_and_resolve_with_omegaconf(base, [("job.title", "${job.nme}")], {})
    assert str(raised.value).startswith("job.title: refers to job.nme,")


def test_first_paragraph_leaves_hydras_search_path_out() -> None:
    assert first_paragraph("  boom\nmore\nConfig search path:\n /home/u/x\n") == "boom\nmore"
