"""`nsysgen regenerate`: rewrite every stale folder under output_dir from its own manifest.

The same recompile as `nsysgen check`; a folder that differs is written again (atomically, as a
compile writes it), and what changed is printed. A folder with files edited by hand is left
alone unless `force`: its edits would be lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsysgen.drivers import check_shared
from nsysgen.drivers.check import Composers, Drift, changed_inputs, check_folder, recompile
from nsysgen.errors import NsysgenError
from nsysgen.output.manifest import MANIFEST_NAME
from nsysgen.output.render import RenderedFile
from nsysgen.output.shared import write_shared
from nsysgen.output.write import output_lock, write_folder


@dataclass
class RegenerateReport:
    current: int = 0
    lines: list[str] = field(default_factory=list)
    updated: int = 0
    kept: int = 0
    failed: int = 0


def regenerate_output(output_dir: Path, force: bool) -> RegenerateReport:
    if not output_dir.is_dir():
        raise NsysgenError(f"error: output_dir {output_dir} does not exist")
    composers = Composers()
    report = RegenerateReport()
    with output_lock(output_dir):
        shared: list[RenderedFile] = []
        known = True
        for manifest_path in sorted(output_dir.rglob(MANIFEST_NAME)):
            needs = _one(manifest_path.parent, composers, force, report)
            shared += needs or ()
            known = known and needs is not None
        if report.current + report.updated + report.kept + report.failed:
            for path, before in write_shared(output_dir, shared).items():
                if before != "current":
                    report.lines.append(f"{output_dir / path}: {before}, written")
            removed = check_shared.remove_orphans(output_dir, shared) if known else []
            report.lines += [f"{path}: no folder needs it, removed" for path in removed]
    return report


def _one(
    folder: Path, composers: Composers, force: bool, report: RegenerateReport
) -> tuple[RenderedFile, ...] | None:
    """Regenerate one folder if it is stale; returns the shared files it needs (None: not
    known, the folder cannot be recompiled)."""
    _, findings, needs = check_folder(folder, composers)
    if not findings:
        report.current += 1
        return needs
    invalid = [f for f in findings if f.kind == "invalid"]
    if invalid:
        report.failed += 1
        report.lines.append(f"{folder}: not regenerated: {invalid[0].detail.strip()}")
        return None
    edited = [f.path.name for f in findings if f.kind == "edited by hand"]
    if edited and not force:
        report.kept += 1
        report.lines.append(
            f"{folder}: kept: edited by hand ({', '.join(edited)}); --force overwrites the edits"
        )
        return needs
    recompiled = recompile(folder, composers)
    assert not isinstance(recompiled, Drift), "check_folder compiled it a moment ago"
    manifest, compiled = recompiled
    statuses = write_folder(folder, compiled.files, compiled.manifest)
    touched = [
        s.path if s.status == "updated" else f"{s.path} ({s.status})"
        for s in statuses
        if s.status != "identical"
    ]
    inputs = changed_inputs(manifest, compiled)
    cause = f" [cause: {', '.join(inputs)} changed]" if inputs else ""
    report.updated += 1
    report.lines.append(f"{folder}: updated {', '.join(touched) or MANIFEST_NAME}{cause}")
    return compiled.shared


def render(report: RegenerateReport, output_dir: Path) -> str:
    parts = [f"{report.updated} updated", f"{report.current} current"]
    if report.kept:
        parts.append(f"{report.kept} kept (edited by hand)")
    if report.failed:
        parts.append(f"{report.failed} not compilable")
    return "\n".join([*report.lines, f"nsysgen regenerate: {', '.join(parts)} in {output_dir}"])
