"""What nsysgen writes of shipped/ (nsysgen/shipped/__init__.py): a module as it is, a package
assembled into the one file it ships as."""

from __future__ import annotations

from nsysgen.shipped import SHIPPED_DIR, STEP_WINDOW_FILE, source_text
from nsysgen.shipped.assemble import assemble


def test_a_package_is_assembled_and_a_module_read_as_it_is() -> None:
    assert source_text("step_window") == assemble("step_window")
    assert STEP_WINDOW_FILE == "nsysgen_window.py"
    modules = sorted(p.stem for p in SHIPPED_DIR.glob("*.py") if p.stem != "__init__")
    for module in modules:
        assert source_text(module) == (SHIPPED_DIR / f"{module}.py").read_text(encoding="utf-8")
