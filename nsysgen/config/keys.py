"""The config keys the schemas define, with their types and descriptions.

One catalog for everything that lists keys to a person: `--help`, `nsysgen show --all`, shell
completion and "did you mean" suggestions. Keys that only some options of a group have (a
target's settings, a workload kind's block) are included, from the schemas' if/then branches.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from nsysgen.resources import schema

ROOT = "config.schema.json"


@dataclass(frozen=True)
class Key:
    path: str  # dotted, e.g. capture.delay
    kind: str  # "integer", "string or null", "object", ...
    description: str
    takes_list: bool = False  # a list is one of its values (`key=[a,b]`)


def _takes_list(node: dict[str, Any]) -> bool:
    types = node.get("type")
    if types == "array" or (isinstance(types, list) and "array" in types):
        return True
    return any(
        isinstance(branch, dict) and _takes_list(branch)
        for branch in (*node.get("oneOf", ()), *node.get("anyOf", ()))
    )


def _resolve(node: dict[str, Any], file: str) -> tuple[dict[str, Any], str]:
    """Follow one $ref (to another file or to this file's $defs)."""
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node, file
    target_file, _, pointer = ref.partition("#")
    target_file = target_file or file
    target = schema(target_file)
    for part in pointer.strip("/").split("/") if pointer else []:
        target = target[part]
    return _resolve({**target, **{k: v for k, v in node.items() if k != "$ref"}}, target_file)


def _kind(node: dict[str, Any]) -> str:
    types = node.get("type")
    if isinstance(types, list):
        return " or ".join(str(t) for t in types)
    if isinstance(types, str):
        return types
    if "enum" in node:
        return "one of " + ", ".join(json.dumps(v) for v in node["enum"])
    if "const" in node:
        return json.dumps(node["const"])
    return "see schema"


def _properties(node: dict[str, Any]) -> dict[str, Any]:
    """Properties of an object schema, including those its if/then branches add."""
    props: dict[str, Any] = dict(node.get("properties", {}))
    for branch in node.get("allOf", []):
        for name, sub in branch.get("then", {}).get("properties", {}).items():
            if name not in props or props[name] is True:
                props[name] = sub
    return {name: sub for name, sub in props.items() if isinstance(sub, dict)}


def _walk(node: dict[str, Any], file: str, path: str) -> Iterator[Key]:
    node, file = _resolve(node, file)
    yield Key(path, _kind(node), str(node.get("description", "")), _takes_list(node))
    if node.get("type") == "object" or "properties" in node:
        for name, sub in sorted(_properties(node).items()):
            yield from _walk(sub, file, f"{path}.{name}")


@cache
def catalog() -> tuple[Key, ...]:
    """Every key of the composed config, in order: group by group, then alphabetically."""
    root = schema(ROOT)
    keys: list[Key] = []
    for name, sub in root["properties"].items():
        keys.extend(_walk(sub, ROOT, name))
    return tuple(keys)


def children(path: str) -> list[str]:
    """The names of the keys directly under `path` ("" for the top level)."""
    prefix = f"{path}." if path else ""
    names = {k.path[len(prefix) :].split(".")[0] for k in catalog() if k.path.startswith(prefix)}
    return sorted(n for n in names if n)


def takes_list(path: str) -> bool:
    """Whether the key at `path` takes a list (a comma outside brackets is then a mistake)."""
    return any(key.takes_list for key in catalog() if key.path == path)


# Words for a setting that nsysgen names otherwise, and where it is.
_NAMED_OTHERWISE = {
    "scheduler": "target (target=slurm or target=eks)",
    "orchestrator": "target (target=slurm or target=eks)",
    "platform": "target (target=slurm or target=eks)",
    "launcher": "workload.launch (per_node or per_gpu)",
}


def suggest(word: str, choices: list[str]) -> str:
    """' (did you mean X?)' for the closest choices, or ''."""
    if word in _NAMED_OTHERWISE and word not in choices:
        return f" (did you mean {_NAMED_OTHERWISE[word]}?)"
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""
