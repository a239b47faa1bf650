"""validate: composed dict + JSON Schemas -> every schema problem, each with its config path.

Messages say what is wrong and what is allowed; an `x-allowed` annotation in a schema replaces the
generic description of a pattern or of a oneOf.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any, cast

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from nsysgen.config.keys import catalog, suggest
from nsysgen.errors import Issue
from nsysgen.resources import SCHEMAS_DIR

ROOT_SCHEMA = "config.schema.json"


@cache
def _root_schema() -> dict[str, Any]:
    schema = json.loads((SCHEMAS_DIR / ROOT_SCHEMA).read_text(encoding="utf-8"))
    assert isinstance(schema, dict)
    return schema


# JSON Schema counts 1e9 (a float) as an integer; a count or a duration typed as 1e9 is a float
# in Python and would reach the files as "1000000000.0", so integers must be ints.
# Schemas are written in ECMA-262 regex syntax (what editors use), where `$` without the m flag
# matches only at the very end. Python's `$` also matches before a final newline, so here every
# unescaped `$` is read as `\Z`: "abc\n" must not pass "^[a-z]+$".
_DOLLAR = re.compile(r"(?<!\\)\$")


@cache
def python_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(_DOLLAR.sub(r"\\Z", pattern))


def _pattern(
    validator: Any, pattern: str, instance: Any, _schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not python_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    ),
)


@cache
def _validator(name: str | None = None) -> Any:
    """The composed-config schema (name None) with every block accepted as is, or one block's.

    Blocks are checked apart, so that a sweep re-checks only the blocks that change.
    """
    resources = []
    for path in sorted(SCHEMAS_DIR.glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        # Without "$schema", a $ref keeps this module's validator class (and its integer rule)
        # instead of switching to jsonschema's stock class for the draft.
        schema.pop("$schema", None)
        resources.append((schema["$id"], Resource.from_contents(schema, DRAFT202012)))
    registry: Registry[Any] = Registry().with_resources(resources)
    root = _root_schema()
    if name is None:
        schema = {**root, "properties": dict.fromkeys(root["properties"], True)}
        schema.pop("$schema", None)
    else:
        schema = {**root["properties"][name], "$id": root["$id"]}
    return _Validator(schema, registry=registry)


@lru_cache(maxsize=4096)
def _block_issues(name: str, canonical: str) -> tuple[Issue, ...]:
    # Keyed by the block's canonical JSON: a sweep changes one block and re-checks only that one.
    errors = _validator(name).iter_errors(json.loads(canonical))
    return tuple(
        Issue(f"{name}.{issue.path}" if issue.path != "<root>" else name, issue.message)
        for error in errors
        for issue in _issues_from(error, name)
    )


def schema_issues(
    data: dict[str, Any], target_schemas: Mapping[str, Mapping[str, Any] | None] | None = None
) -> list[Issue]:
    """Every place where `data` breaks the composed-config schema. `target_schemas`: the
    schema each registered target ships for its block (None: schemas/target.schema.json
    holds its branch), passed in by the pipeline."""
    issues: list[Issue] = []
    for error in _validator().iter_errors(data):
        issues.extend(_issues_from(error))
    for name in _root_schema()["properties"]:
        if name in data:
            own = _own_target_schema(data[name], target_schemas or {}) if name == "target" else None
            if own is not None:
                issues += _issues_against(own, name, data[name])
            else:
                issues += _block_issues(name, json.dumps(data[name], sort_keys=True))
    return sorted(set(issues))


def _own_target_schema(
    block: Any, schemas: Mapping[str, Mapping[str, Any] | None]
) -> Mapping[str, Any] | None:
    """The schema a registered target ships for its block (None: schemas/target.schema.json)."""
    name = block.get("name") if isinstance(block, dict) else None
    return schemas.get(name) if isinstance(name, str) else None


def _issues_against(schema: Mapping[str, Any], name: str, block: Any) -> list[Issue]:
    return [
        Issue(f"{name}.{issue.path}" if issue.path != "<root>" else name, issue.message)
        for error in _Validator(dict(schema)).iter_errors(block)
        for issue in _issues_from(error, name)
    ]


def dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def _issues_from(error: ValidationError, block: str = "") -> Iterator[Issue]:
    inner = _inner(error)
    # A list or mapping whose branch matched in shape but not in an element
    # (capture.ranks=[0,-1]): the element is the mistake, named with its index.
    for found in inner:
        yield from _issues_from(found, block)
    if not inner:
        yield from _issues_of_one(error, block)


def _issues_of_one(error: ValidationError, block: str) -> Iterator[Issue]:
    path = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    allowed = schema.get("x-allowed")
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(schema.get("properties", {}))
        for key in sorted(set(error.instance) - set(known)):
            yield Issue(
                dotted([*path, key]),
                f"unknown key{suggest(str(key), known)} (allowed keys: {', '.join(known)})",
            )
    elif kind == "required":
        for key in cast(list[str], error.validator_value):
            if isinstance(error.instance, dict) and key not in error.instance:
                expected = _expected([block, *path] if block else path, key)
                yield Issue(dotted([*path, key]), f"missing (required; {expected})")
    elif kind in ("enum", "const"):
        value = error.validator_value
        values = cast(list[Any], value) if kind == "enum" else [value]
        choices = allowed or ", ".join(_show(v) for v in values)
        yield Issue(dotted(path), f"{_show(error.instance)} is not allowed (allowed: {choices})")
    elif "propertyNames" in error.relative_schema_path and isinstance(error.instance, str):
        # A key that may not be used: name it in the path, like an unknown key.
        detail = allowed or _fallback_allowed(error)
        yield Issue(dotted([*path, error.instance]), f"key not allowed (allowed: {detail})")
    elif kind in ("oneOf", "anyOf", "pattern", "not", "propertyNames"):
        detail = allowed or _fallback_allowed(error)
        yield Issue(dotted(path), f"{_show(error.instance)} is not allowed (allowed: {detail})")
    elif kind == "type":
        types = error.validator_value
        names = allowed or (" or ".join(types) if isinstance(types, list) else str(types))
        hint = _text_hint(error.instance, types, dotted([block, *path] if block else path))
        yield Issue(
            dotted(path), f"{_show(error.instance)} has the wrong type (allowed: {names}{hint})"
        )
    else:
        allowed = allowed or _BOUND_ALLOWED.get(str(kind), "{}").format(error.validator_value)
        detail = f" (allowed: {allowed})" if allowed else ""
        yield Issue(dotted(path), f"{error.message}{detail}")


def _inner(error: ValidationError) -> list[ValidationError]:
    """The errors of a oneOf/anyOf's branches that lie inside the value (in an element or a
    key of it), when the value is a list or mapping; the value itself is then of the right
    kind."""
    if error.validator not in ("oneOf", "anyOf") or not isinstance(error.instance, (list, dict)):
        return []
    depth = len(error.absolute_path)
    return [e for e in error.context or () if len(e.absolute_path) > depth]


_BOUND_ALLOWED = {
    "minimum": ">= {}",
    "maximum": "<= {}",
    "minItems": "at least {} item(s)",
    "maxLength": "at most {} characters",
    "minLength": "at least {} character(s)",
    "uniqueItems": "distinct items",
}


def _expected(path: Sequence[str | int], key: str) -> str:
    """What a missing key should hold: its type and description from the schema."""
    found = {k.path: k for k in catalog()}.get(dotted([*path, key]))
    if found is None:
        return "see the schema in schemas/"
    return f"{found.kind}: {found.description}" if found.description else found.kind


def _fallback_allowed(error: ValidationError) -> str:
    if error.validator == "pattern":
        return f"text matching {error.validator_value}"
    return "see the schema in schemas/"


def _text_hint(value: Any, types: Any, path: str) -> str:
    """Where text is expected, a number or boolean is the YAML or Hydra reading of unquoted
    words (`true`, `1.5`): how to quote them, in a file and on a command line (where the shell
    takes one level of quotes)."""
    if types != "string" or not isinstance(value, (bool, int, float)):
        return ""
    text = _show(value)
    return f'; quote text: "{text}" in a file, \'{path}="{text}"\' on the command line'


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, sort_keys=True)
