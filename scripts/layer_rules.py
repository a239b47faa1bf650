"""The package's layers and the rule between them, read from the code's imports: defined here
for both tests/test_layers.py (which holds the code to it) and scripts/layers.py (which draws
CONTRIBUTING.md's picture from it)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Bottom to top; a module's layer is the longest prefix listed.
LAYERS = [
    (
        "base",
        ["nsysgen", "nsysgen.errors", "nsysgen.resources", "nsysgen.links", "nsysgen.folders"],
    ),
    # The report-side facts (the run contract, the export, the run's choice): standard library
    # only, imported by analyze and by targets, and shipped inside the verifier.
    ("reports", ["nsysgen.reports"]),
    ("shipped", ["nsysgen.shipped"]),
    ("config", ["nsysgen.config"]),
    ("model", ["nsysgen.model"]),
    ("patching", ["nsysgen.patching"]),
    ("output", ["nsysgen.output"]),
    ("profile", ["nsysgen.profile"]),
    ("targets", ["nsysgen.targets"]),
    ("drivers", ["nsysgen.drivers"]),
    (
        "face",
        [
            "nsysgen.cli",
            "nsysgen.completion",
            "nsysgen.verify_cli",
            "nsysgen.__main__",
            "nsysgen.dask_cluster",
        ],
    ),  # fmt: skip
]
ANALYZE = "nsysgen.analyze"


def modules() -> dict[str, Path]:
    found = {}
    for path in (REPO / "nsysgen").rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """What `path` imports: the nsysgen module each name belongs to (the longest known
    prefix of `a.b.c`), or the top-level name outside nsysgen."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    out = set()
    for name in names:
        parts = name.split(".")
        prefixes = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
        out.add(next((p for p in prefixes if p in known), parts[0]))
    return out


def rank(module: str) -> tuple[str, int]:
    if module == ANALYZE or module.startswith(ANALYZE + "."):
        return "analyze", -1
    matches = [(len(p), i) for i, (_, ps) in enumerate(LAYERS) for p in ps
               if module == p or module.startswith(p + ".")]  # fmt: skip
    assert matches, f"{module} is in no layer"
    return LAYERS[max(matches)[1]][0], max(matches)[1]


# The standalone layers run where nsysgen is not installed (inside the shipped verifier).
STANDALONE = ("reports", "shipped")


def may_import(layer: str, other: str) -> bool:
    """The rule, layer by layer (scripts/layers.py draws CONTRIBUTING.md's picture from it)."""
    levels = {name: index for index, (name, _) in enumerate(LAYERS)}
    if layer == "analyze":
        return other in ("analyze", "base", "reports")
    if other == "analyze":
        return layer == "face"  # the CLI's lazy dispatch, and the Dask entry point
    if layer in STANDALONE:
        return other in STANDALONE and levels[other] <= levels[layer]
    return levels[other] <= levels[layer]
