"""The editor copies of the schemas (nsysgen/config/editor_schemas.py), derived from small
hand-written schemas: each value that a reference may stand for also takes `${a.b}` (text with a
pattern takes text around it, other values only the whole reference), plain text and `if` are
left alone, the `$id` moves to editor/, and writing the copies is idempotent.
tests/compile/test_schemas_for_editors.py checks the committed copies against real files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from nsysgen.config.editor_schemas import (
    INTERPOLATION,
    NAMES,
    WHOLE_REFERENCE,
    editor_schema,
    write_editor_schemas,
)
from tests.conftest import REPO

SCHEMA: dict[str, Any] = {
    "$id": "https://example.org/schemas/c.schema.json",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "path": {"type": "string", "pattern": "^/", "description": "absolute"},
        "text": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "ranks": {"type": "array", "items": {"type": "integer"}},
        "policy": {"oneOf": [{"type": "integer"}, {"enum": ["all"]}]},
    },
    "if": {"properties": {"count": {"const": 1}}},
    "then": {"properties": {"text": {"type": "string", "maxLength": 3}}},
}


def valid(schema: dict[str, Any], instance: dict[str, Any]) -> bool:
    return Draft202012Validator(schema).is_valid(instance)


def test_the_id_moves_to_editor_with_a_comment_naming_its_source() -> None:
    derived = editor_schema(SCHEMA)
    assert derived["$id"] == "https://example.org/schemas/editor/c.schema.json"
    assert derived["$comment"].startswith("Generated from ../c.schema.json by ")
    assert list(derived)[:2] == ["$id", "$comment"]
    assert SCHEMA["$id"] == "https://example.org/schemas/c.schema.json"  # input untouched


def test_each_value_takes_the_reference_that_may_stand_for_it() -> None:
    properties = editor_schema(SCHEMA)["properties"]
    assert properties["path"] == {
        "description": "absolute",  # outside the anyOf, where editors show it
        "anyOf": [{"type": "string", "pattern": "^/"}, INTERPOLATION],
    }
    assert properties["text"] == {"type": "string"}  # takes any text as it is
    assert properties["count"]["anyOf"][1] == WHOLE_REFERENCE
    assert properties["ranks"]["type"] == "array"  # the list's items, not the list
    assert properties["ranks"]["items"]["anyOf"][1] == WHOLE_REFERENCE
    assert properties["policy"]["anyOf"] == [SCHEMA["properties"]["policy"], WHOLE_REFERENCE]
    derived = editor_schema(SCHEMA)
    assert derived["if"] == SCHEMA["if"]
    assert derived["then"]["properties"]["text"]["anyOf"][1] == WHOLE_REFERENCE


def test_references_pass_as_written_and_wrong_values_still_fail() -> None:
    derived = editor_schema(SCHEMA)
    passing: list[dict[str, Any]] = [
        {"path": "${cluster.shared_fs}/reports"},
        {"count": "${cluster.nodes}", "ranks": [0, "${a.b}"], "policy": "${x}"},
        {"count": 1, "text": "${a.long-name}"},
    ]
    for instance in passing:
        assert valid(derived, instance) and not valid(SCHEMA, instance), instance
    failing: list[dict[str, Any]] = [
        {"path": "relative"},
        {"path": "${a} b"},  # whitespace: no path
        {"count": "${oc.env:HOME}"},  # a resolver call, which nsysgen refuses
        {"count": "3 ${a}"},
        {"policy": "some"},
        {"count": 0},
    ]
    for instance in failing:
        assert not valid(derived, instance), instance


def test_writing_the_copies_is_idempotent_and_removes_stale_ones(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    shutil.copytree(REPO / "schemas", schemas, ignore=shutil.ignore_patterns("editor"))
    written = write_editor_schemas(schemas)
    assert sorted(written) == sorted(f"{name}.schema.json" for name in NAMES)
    for file in written:
        assert (schemas / "editor" / file).read_text() == (
            REPO / "schemas" / "editor" / file
        ).read_text()
    (schemas / "editor" / "old.schema.json").write_text("{}")
    assert write_editor_schemas(schemas) == ["old.schema.json"]
    assert write_editor_schemas(schemas) == []
