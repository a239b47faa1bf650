"""Overrides as typed (nsysgen/config/overrides.py), on overrides parsed by Hydra's own parser:
a comma list for a key that takes a list, the shapes Hydra would reject with a message about
its grammar, the quoting hint for `=` in list items, and digits for the environment as text."""

from __future__ import annotations

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override

from nsysgen.config.overrides import (
    added_env_integer,
    check_shape,
    env_integers_as_text,
    quoting_hint,
    refuse_comma_list,
)
from nsysgen.errors import ComposeError

PARSER = OverridesParser.create()


def parsed(text: str) -> Override:
    (override,) = PARSER.parse_overrides([text])
    return override


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("capture.ranks=0,8", "capture.ranks=0,8: for a list of ranks write capture.ranks=[0,8]"),
        ("capture.trace=cuda,nvtx", "capture.trace=cuda,nvtx: for a list write capture.trace="),
    ],
)
def test_a_comma_list_for_a_list_key_is_refused_with_the_brackets(text: str, message: str) -> None:
    with pytest.raises(ComposeError) as raised:
        refuse_comma_list(parsed(text))
    assert str(raised.value).startswith(message)
    assert str(raised.value).endswith("(a comma outside brackets is a sweep, which needs -m)")


@pytest.mark.parametrize("text", ["capture.delay=1,2", "capture.ranks=[0,8]", "job.name=a"])
def test_a_sweep_of_a_scalar_or_a_written_list_is_left_to_the_caller(text: str) -> None:
    refuse_comma_list(parsed(text))  # nothing raised


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("=3", "'=3': an override needs a key before '=' (e.g. capture.delay=30)"),
        ("+=3", "'+=3': an override needs a key before '=' (e.g. capture.delay=30)"),
        ("a+b=1,2", "a+b=1,2: a paired sweep needs -m (--multirun): nsysgen -m a+b=1,2"),
    ],
)
def test_shapes_hydra_would_misreport_are_refused_first(text: str, message: str) -> None:
    with pytest.raises(ComposeError) as raised:
        check_shape(text)
    assert str(raised.value) == message
    check_shape("a=b+c")  # a plus in a value is no paired sweep


def test_list_items_holding_equals_get_a_quoting_hint() -> None:
    assert quoting_hint("workload.python.args=[--lr=1]") == (
        "; list items holding '=' need quotes: "
        """workload.python.args='["--max_steps=200", "--lr=1e-4"]'"""
    )
    assert quoting_hint("a=b=c") == ""


def test_digits_for_the_environment_become_text_and_nothing_else_does() -> None:
    assignments = [
        ("cluster.env.A", 4),
        ("cluster.env.B", True),
        ("cluster.env.C", 1.5),
        ("workload.env_defaults.X.value", 7),
        ("capture.delay", 4),
        ("cluster.env.A.b", 4),
    ]
    assert env_integers_as_text(assignments) == [
        ("cluster.env.A", "4"),
        ("cluster.env.B", True),
        ("cluster.env.C", 1.5),
        ("workload.env_defaults.X.value", "7"),
        ("capture.delay", 4),
        ("cluster.env.A.b", 4),
    ]
    assert added_env_integer(parsed("+cluster.env.OMP=4")) == "+cluster.env.OMP='4'"
    assert added_env_integer(parsed("+cluster.env.OMP=x")) is None
    assert added_env_integer(parsed("cluster.env.OMP=4")) is None  # a plain assignment
    assert added_env_integer(parsed("+x.y=4")) is None
