"""`nsysgen show`: the composed, resolved config as YAML, optionally with each key documented."""

from __future__ import annotations

from typing import Any

import yaml

from nsysgen.config.compose import Composed
from nsysgen.config.keys import catalog


def _scalar(value: Any) -> str:
    # One flow-style YAML value per line: PyYAML does the quoting, so the text round-trips.
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, allow_unicode=True)
    return text.removesuffix("\n...\n").rstrip("\n")


def _lines(node: dict[str, Any], path: str, indent: int, docs: dict[str, str]) -> list[str]:
    lines = []
    pad = "  " * indent
    for key, value in node.items():
        dotted = f"{path}.{key}" if path else str(key)
        if dotted in docs:
            lines.append(f"{pad}# {docs[dotted]}")
        name = _scalar(str(key))
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{name}:")
            lines += _lines(value, dotted, indent + 1, docs)
        else:
            lines.append(f"{pad}{name}: {_scalar(value)}")
    return lines


def show_config(composed: Composed, with_keys: bool = False) -> str:
    docs = {}
    if with_keys:
        docs = {
            key.path: f"{key.kind}: {key.description}" if key.description else key.kind
            for key in catalog()
        }
    groups = " ".join(f"{group}={option}" for group, option in sorted(composed.choices.items()))
    head = [f"# groups: {groups}"]
    return "\n".join(head + _lines(composed.data, "", 0, docs)) + "\n"
