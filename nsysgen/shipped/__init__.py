"""Files copied into every generated folder and run where nsysgen is not installed: standard
library only, and nothing of nsysgen."""

from __future__ import annotations

from pathlib import Path

from nsysgen.shipped.assemble import assemble

SHIPPED_DIR = Path(__file__).parent
# The step helper's file name wherever nsysgen writes it (the site folder, beside a patched
# script, a folder's copy for an edit by hand): the patched line and sitecustomize import it.
STEP_WINDOW_FILE = "nsysgen_window.py"
# The folder a patched loop imports it from, given by the launch (nsys-exec, the EKS pods).
HELPER_DIR = "NSYSGEN_HELPER_DIR"


def source_text(module: str) -> str:
    """The text of one shipped module, as nsysgen writes it into the output: a package of
    small modules is assembled into the one file it ships as (shipped/assemble.py)."""
    if (SHIPPED_DIR / module).is_dir():
        return assemble(module)
    return (SHIPPED_DIR / f"{module}.py").read_text(encoding="utf-8")
