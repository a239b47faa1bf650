"""The nsys and QdstrmImporter that read the reports. The export itself is
nsysgen/reports/export.py's, the one `nsysgen analyze` makes too, so each reuses the other's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from nsysgen.reports.contract import Expect
from nsysgen.reports.export import NoNsys, current_export, find_nsys
from nsysgen.shipped.verify.model import BadInput


@dataclass
class Tools:
    nsys: str | None
    importer: str | None
    version: str | None


def find_tools(expect: Expect, nsys: str | None, importer: str | None) -> Tools:
    """--nsys, $NSYS, the setup's nsys (its cluster path) or nsys on PATH; the importer alike."""
    try:
        nsys = find_nsys(nsys, expect.get("nsys"))
    except NoNsys as error:
        raise BadInput(str(error)) from None
    importer = importer or os.environ.get("QDSTRM_IMPORTER") or expect.get("importer")
    if importer and not os.access(importer, os.X_OK):
        importer = shutil.which("QdstrmImporter")
    version = None
    if nsys:
        proc = subprocess.run([nsys, "--version"], capture_output=True, text=True, check=False)
        found = re.search(r"version (\S+)", proc.stdout)
        version = found.group(1) if found else None
    return Tools(nsys, importer, version)


def convert(tools: Tools, qdstrm: Path, output: Path) -> str | None:
    """QdstrmImporter qdstrm -> output; None when it worked, else why not."""
    if not tools.importer:
        return "no QdstrmImporter to convert it (set QDSTRM_IMPORTER)"
    proc = subprocess.run(
        [tools.importer, "--input-file", str(qdstrm), "--output-file", str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not output.is_file() or output.stat().st_size == 0:
        last = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        return f"QdstrmImporter failed (exit {proc.returncode}: {last[0][:200]})"
    return None


def export_sqlite(tools: Tools, report: Path) -> tuple[Path | None, str | None]:
    """The report's SQLite export (an up-to-date one is reused); (None, why) if unreadable."""
    export, why = current_export(tools.nsys, report)
    return export, (why or None)
