"""What any config value may hold (nsysgen/config/hygiene.py): every key and value walked, each
control character named by its code point, non-finite and out-of-range numbers refused, and
resolver calls told from plain `${a.b}` references."""

from __future__ import annotations

import pytest

from nsysgen.config.hygiene import (
    MAX_INTEGER,
    control_character,
    describe,
    resolver_issues,
    value_issues,
    walk,
)
from nsysgen.errors import Issue

CONTROL = "(allowed: printable text without line breaks, tabs or other control characters)"


@pytest.mark.parametrize(
    ("char", "text"),
    [
        ("\n", "U+000A line feed"),
        ("\r", "U+000D carriage return"),
        ("\t", "U+0009 control character"),
        ("\x85", "U+0085 control character"),
        ("\u2028", "U+2028 line separator"),
    ],
)
def test_each_control_character_is_named_by_its_code_point(char: str, text: str) -> None:
    assert describe(char) == text
    assert control_character(f"ok{char}ok") == text


def test_plain_text_has_no_control_character() -> None:
    assert control_character("/fsx/nsight-reports/%q{SLURM_JOB_ID} é ü 日本") is None


def test_walk_yields_keys_leaves_and_list_items() -> None:
    assert list(walk({"a": [1, {"b": None}], "c": "x"})) == [
        ("a", "a", True),
        ("a[0]", 1, False),
        ("a[1].b", "b", True),
        ("a[1].b", None, False),
        ("c", "c", True),
        ("c", "x", False),
    ]


def test_value_issues_find_keys_values_and_numbers_sorted() -> None:
    data = {
        "d": {"e": "x\ny"},
        "a\tb": 1,
        "c": [float("inf"), MAX_INTEGER, MAX_INTEGER + 1, True, float("nan")],
    }
    issues = value_issues(data)
    assert [i.path for i in issues] == ["a\tb", "c[0]", "c[2]", "c[4]", "d.e"]
    assert issues[0].message == f"key contains U+0009 control character {CONTROL}"
    assert issues[1].message == "inf is not a finite number (allowed: a finite number)"
    assert issues[2].message == (
        "9007199254740993 is out of range (allowed: -2^53 .. 2^53, and the schema's)"
    )
    assert issues[4].message == f"value contains U+000A line feed {CONTROL}"


def test_resolver_calls_are_refused_and_references_are_not() -> None:
    data = {"a": "${oc.env:HOME}", "b": "${a.b}", "c": ["x ${ my-res.x : y}"], "d": "$HOME"}
    issues = resolver_issues(data, "top")
    assert [i.path for i in issues] == ["top.a", "top.c[0]"]
    assert issues[0].message.startswith(
        "calls the resolver 'oc.env'; resolvers would copy this machine's environment"
    )
    assert "'my-res.x'" in issues[1].message
    (alone,) = resolver_issues("${oc.decode:x}", "key")  # a single override's value
    assert alone == Issue("key", issues[0].message.replace("'oc.env'", "'oc.decode'"))
