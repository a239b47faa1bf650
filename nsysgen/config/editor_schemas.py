"""Editor schemas: the JSON Schemas as an editor checks a config file, as written.

schemas/<name>.schema.json check the composed config after nsysgen resolves its `${a.b}`
references (validate.py, keys.py). An editor (yaml-language-server) checks one file before Hydra
composes it, references unresolved, so `report_dir: ${cluster.shared_fs}/reports` fails the
absolute-path pattern there although the composed config is valid. The validation schemas get no
"or a reference" branch: a resolved value can still hold a literal `${a.b}` (OmegaConf turns an
escaped `\\${a.b}` into one), and such a branch would let e.g. a relative report_dir through.

So the editors' copies, schemas/editor/<name>.schema.json, are derived from the validation
schemas here and committed; tests/compile/test_schemas_for_editors.py fails when they are stale
and rewrites them under `pytest --update-golden`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EDITOR_DIR = "editor"
# One per config group, and the composed config (its $refs name the groups' schemas).
NAMES = ("cluster", "capture", "workload", "target", "nsight", "config")

# Node references such as ${cluster.shared_fs} (key names as interpolate.py reads them) in text of
# path and name characters: no whitespace, quotes or shell syntax, and no resolver calls
# (${oc.env:X}), which nsysgen refuses.
_KEY = "[A-Za-z_][A-Za-z0-9_-]*"
_REFERENCE = rf"\$\{{{_KEY}(\.{_KEY})*\}}"
_TEXT = "[A-Za-z0-9_./:@%+=,-]*"
# Where a string pattern is: text holding references ("${cluster.shared_fs}/reports"), which
# resolves to a string the editor cannot check.
INTERPOLATION: dict[str, Any] = {"type": "string", "pattern": rf"^{_TEXT}({_REFERENCE}{_TEXT})+$"}
# Where any other single value is: one whole reference ("${cluster.nodes}"), which OmegaConf
# replaces by the referenced value itself, so an integer key may hold one.
WHOLE_REFERENCE: dict[str, Any] = {"type": "string", "pattern": rf"^{_REFERENCE}$"}

# Subschemas copied unchanged. `if`: a reference must not select a branch, its value is unknown
# here. `not`: widening what it matches would narrow what passes. `propertyNames`: OmegaConf
# resolves values, never keys. The others hold values, not schemas.
_KEPT = frozenset({"if", "not", "propertyNames", "enum", "const", "default", "examples"})
# Keywords whose subschema (or each of whose subschemas) is one config value: a key's, an item's.
_VALUE = frozenset({"items", "additionalProperties"})
_VALUE_MAPS = frozenset({"properties", "patternProperties", "$defs"})
_VALUE_LISTS = frozenset({"prefixItems"})
_SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})
# A string schema with none of these already accepts a reference as it is.
_STRING_LIMITS = ("pattern", "enum", "const", "format", "maxLength")

_COMMENT = (
    "Generated from ../{file} by nsysgen.config.editor_schemas, do not edit: the same keys for "
    "config files as written, where a value may hold ${{a.b}} references. Update with "
    "`pytest --update-golden tests/compile/test_schemas_for_editors.py`."
)


def editor_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The editor copy of a validation schema: every value the composed config could get from a
    reference also accepts the reference as written.

    Its `$id` moves to .../editor/<file>: the relative `$ref`s between the schemas
    ("cluster.schema.json") then name the editor copies, whether an editor resolves them against
    the `$id` or, as yaml-language-server does, against the folder the schema was read from.
    """
    derived = _derive(schema, at_value=False)
    assert isinstance(derived, dict)
    out: dict[str, Any] = {}
    for key, value in derived.items():
        if key != "$id":
            out[key] = value
            continue
        base, _, file = str(value).rpartition("/")
        out["$id"] = f"{base}/{EDITOR_DIR}/{file}"
        out["$comment"] = _COMMENT.format(file=file)
    return out


def editor_schema_texts(schemas_dir: Path) -> dict[str, str]:
    """File name under schemas_dir/editor/ -> its text, from the validation schemas in schemas_dir
    (formatted like them: 2-space indent, their key order, a final newline)."""
    texts = {}
    for name in NAMES:
        file = f"{name}.schema.json"
        schema = json.loads((schemas_dir / file).read_text(encoding="utf-8"))
        texts[file] = json.dumps(editor_schema(schema), indent=2, ensure_ascii=False) + "\n"
    return texts


def write_editor_schemas(schemas_dir: Path) -> list[str]:
    """Bring schemas_dir/editor/ up to date; the names of the files written or removed."""
    folder = schemas_dir / EDITOR_DIR
    folder.mkdir(exist_ok=True)
    texts = editor_schema_texts(schemas_dir)
    changed = []
    for stale in sorted(folder.glob("*.schema.json")):
        if stale.name not in texts:
            stale.unlink()
            changed.append(stale.name)
    for file, text in texts.items():
        path = folder / file
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(file)
    return changed


def _derive(node: Any, *, at_value: bool) -> Any:
    if isinstance(node, list):
        # anyOf/oneOf/allOf branches: the value they describe gets its alternative once, above
        # them (inside a oneOf, two branches that each took a reference would refuse it).
        return [_derive(item, at_value=False) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _derive_keyword(key, value) for key, value in node.items()}
    return _or_reference(out) if at_value else out


def _derive_keyword(key: str, value: Any) -> Any:
    if key in _KEPT:
        return value
    if key in _VALUE_MAPS and isinstance(value, dict):
        return {name: _derive(sub, at_value=True) for name, sub in value.items()}
    if key in _VALUE_LISTS and isinstance(value, list):
        return [_derive(sub, at_value=True) for sub in value]
    return _derive(value, at_value=key in _VALUE)


def _or_reference(node: dict[str, Any]) -> dict[str, Any]:
    """`node`, a config value's schema, also accepting the reference that may stand for it.

    The description stays outside the anyOf, where editors show it on hover and completion.
    """
    alternative = _alternative(node)
    if alternative is None:
        return node
    inner = {key: value for key, value in node.items() if key != "description"}
    outer = {"description": node["description"]} if "description" in node else {}
    return {**outer, "anyOf": [inner, alternative]}


def _alternative(node: dict[str, Any]) -> dict[str, Any] | None:
    branches = [node, *node.get("anyOf", []), *node.get("oneOf", [])]
    schemas = [branch for branch in branches if isinstance(branch, dict)]
    if any("pattern" in branch for branch in schemas):
        return INTERPOLATION
    if "string" in _types(node) and not any(limit in node for limit in _STRING_LIMITS):
        return None
    if any(_scalar(branch) for branch in schemas):
        return WHOLE_REFERENCE
    return None  # objects and lists: their keys and items are values of their own


def _scalar(node: Mapping[str, Any]) -> bool:
    return bool(_types(node) & _SCALARS) or "enum" in node or "const" in node


def _types(node: Mapping[str, Any]) -> set[str]:
    kinds = node.get("type", [])
    return {str(kind) for kind in kinds} if isinstance(kinds, list) else {str(kinds)}
