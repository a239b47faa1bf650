"""scripts/layers.py: CONTRIBUTING.md's picture of the layers has one box per layer, an arrow
only where the code imports across layers, and one table row per folder or module LAYERS names,
with what it owns taken from its docstring."""

from __future__ import annotations

from scripts.layer_rules import LAYERS
from scripts.layers import allowed, entries, layer_imports, layer_names, layers_section, owns


def test_the_picture_has_a_box_per_layer_and_an_arrow_per_import_between_layers() -> None:
    section = layers_section()
    for layer in layer_names():
        assert f'  {layer}["{layer}: ' in section
    arrows = [line.strip() for line in section.splitlines() if " --> " in line]
    assert arrows == [f"{a} --> {b}" for a, b in sorted(layer_imports())]
    assert all(a != b for a, b in layer_imports())


def test_the_table_has_a_row_per_folder_or_module_with_what_it_owns() -> None:
    rows = [line for line in layers_section().splitlines() if line.startswith("| `")]
    assert len(rows) == len(entries()) == sum(len(p) for _, p in LAYERS) + 1
    assert owns("nsysgen.errors").startswith("Errors that reach the user")


def test_what_a_layer_may_import_is_said_in_words() -> None:
    assert allowed("profile") == "itself and every layer below"
    assert allowed("face") == "every layer, analyze included"
    assert allowed("analyze") == "base, reports, analyze"
    assert allowed("shipped") == "reports, shipped"
