"""The schema check (nsysgen/config/validate.py) on composed configs with one fault each: every
message names its config path and what is allowed, integers must be ints (not 1e9 or true), a
pattern's `$` does not let a trailing line break through, and a target's own schema checks its
block."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from nsysgen.config.compose import Composer
from nsysgen.config.validate import dotted, python_pattern, schema_issues
from nsysgen.errors import Issue

Edit = Callable[[dict[str, Any]], None]
NAME = "lower-case letters, digits, '.', '_', '-'"


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return Composer().compose([]).data


def issues_after(data: dict[str, Any], edit: Edit) -> list[Issue]:
    changed = copy.deepcopy(data)
    edit(changed)
    return schema_issues(changed)


def test_the_default_config_is_valid(data: dict[str, Any]) -> None:
    assert schema_issues(data) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["cluster"].update(nodes=True),
            [Issue("cluster.nodes", "true has the wrong type (allowed: integer)")],
        ),
        (
            lambda d: d["cluster"].update(nodes=1e9),
            [
                Issue("cluster.nodes", "1000000000.0 has the wrong type (allowed: integer)"),
                Issue(
                    "cluster.nodes",
                    "1000000000.0 is greater than the maximum of 100000 (allowed: <= 100000)",
                ),
            ],
        ),
        (
            lambda d: d["job"].update(name=True),
            [
                Issue(
                    "job.name",
                    f'true has the wrong type (allowed: {NAME}; quote text: "true" in a file, '
                    "'job.name=\"true\"' on the command line)",
                )
            ],
        ),
        (
            lambda d: d["job"].update(name="abc\n"),  # `$` is the very end, not before a \n
            [Issue("job.name", f"'abc\\n' is not allowed (allowed: {NAME})")],
        ),
        (
            lambda d: d["capture"].update(mode="windw"),
            [Issue("capture.mode", "'windw' is not allowed (allowed: 'window', 'steps', 'nvtx')")],
        ),
        (
            lambda d: d["job"].pop("name"),
            [
                Issue(
                    "job.name",
                    "missing (required; string: folder name under output_dir, Slurm job name "
                    "and report-name prefix)",
                )
            ],
        ),
    ],
    ids=["bool-for-int", "float-for-int", "bool-for-text", "trailing-newline", "enum", "missing"],
)
def test_each_fault_is_one_message_at_its_path(
    data: dict[str, Any], edit: Edit, expected: list[Issue]
) -> None:
    assert issues_after(data, edit) == expected


def test_an_unknown_key_lists_the_known_ones_and_a_close_one(data: dict[str, Any]) -> None:
    (issue,) = issues_after(data, lambda d: d["cluster"].update(nodez=2))
    assert issue.path == "cluster.nodez"
    assert issue.message.startswith("unknown key (did you mean nodes?) (allowed keys: ")
    (top,) = issues_after(data, lambda d: d.update(extra=1))
    assert top == Issue(
        "extra",
        "unknown key (allowed keys: analysis, capture, cluster, job, lints, nsight, output_dir, "
        "target, workload)",
    )


def test_a_targets_own_schema_checks_its_block(data: dict[str, Any]) -> None:
    own = {data["target"]["name"]: {"type": "object", "required": ["zzz"]}}
    assert schema_issues(data, own) == [
        Issue("target.zzz", "missing (required; see the schema in schemas/)")
    ]


def test_patterns_read_dollar_as_the_very_end_and_paths_read_as_written() -> None:
    assert python_pattern("^[a-z]+$").pattern == "^[a-z]+\\Z"
    assert python_pattern(r"^a\$$").pattern == r"^a\$\Z"
    assert python_pattern("^[a-z]+$").search("abc\n") is None
    assert dotted(["a", 0, "b", 1]) == "a[0].b[1]"
    assert dotted([]) == "<root>"
