"""CONTRIBUTING.md's layers, drawn from the code: which layer imports which (read from every
import of the package by scripts/layer_rules.py, whose LAYERS tests/test_layers.py holds the
code to), and for each folder or top-level module what it owns (the first paragraph of its
docstring) and what it may import."""

from __future__ import annotations

import ast
from collections import defaultdict

from scripts.layer_rules import ANALYZE, LAYERS, REPO, imports, may_import, modules, rank


def layer_names() -> list[str]:
    return [name for name, _ in LAYERS] + ["analyze"]


def entries() -> list[tuple[str, str]]:
    """(layer, module prefix) for every folder or module LAYERS names, bottom to top."""
    return [(name, prefix) for name, prefixes in LAYERS for prefix in prefixes] + [
        ("analyze", ANALYZE)
    ]


def shown(prefix: str) -> str:
    """`nsysgen.profile` -> `profile/`, `nsysgen.cli` -> `cli/` or `cli.py`."""
    parts = prefix.split(".")[1:]
    if not parts:
        return "nsysgen/"
    path = REPO.joinpath("nsysgen", *parts)
    return "/".join(parts) + ("/" if path.is_dir() else ".py")


def owns(prefix: str) -> str:
    """The first paragraph of the folder's or module's docstring, on one line."""
    parts = prefix.split(".")[1:]
    path = REPO.joinpath("nsysgen", *parts)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.is_file():
        return ""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


def layer_imports() -> set[tuple[str, str]]:
    """(importing layer, imported layer) for every import between two layers."""
    known = modules()
    return {
        (rank(module)[0], rank(other)[0])
        for module, path in known.items()
        for other in imports(path, known)
        if other in known and rank(module)[0] != rank(other)[0]
    }


def picture() -> list[str]:
    members: dict[str, list[str]] = defaultdict(list)
    for layer, prefix in entries():
        members[layer].append(shown(prefix))
    lines = ["```mermaid", "flowchart BT"]
    for layer in layer_names():
        lines.append(f'  {layer}["{layer}: {", ".join(members[layer])}"]')
    for importer, imported in sorted(layer_imports()):
        lines.append(f"  {importer} --> {imported}")
    return [*lines, "```"]


def table() -> list[str]:
    lines = [
        "| folder or module | layer | what it owns | may import |",
        "|---|---|---|---|",
    ]
    for layer, prefix in entries():
        lines.append(f"| `{shown(prefix)}` | {layer} | {owns(prefix)} | {allowed(layer)} |")
    return lines


def allowed(layer: str) -> str:
    """What `layer` may import, in words: the usual rule said once, the exceptions listed."""
    names = layer_names()
    below = names[: names.index(layer) + 1] if layer != "analyze" else []
    allowed = [other for other in names if may_import(layer, other)]
    if allowed == below:
        return "itself and every layer below"
    if allowed == names:
        return "every layer, analyze included"
    return ", ".join(allowed)


def layers_section() -> str:
    """The section between `<!-- layers` and `<!-- /layers -->` (its first line included)."""
    intro = (
        "An arrow is an import from one layer into another, read from the code; the table says "
        "what each folder owns (its docstring) and which layers it may import."
    )
    return "\n".join([*picture(), "", intro, "", *table()])
