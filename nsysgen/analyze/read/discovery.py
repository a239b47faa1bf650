"""Which reports a path holds: each report once with its export, and what to do with archived
ones, which analyze does not read."""

from __future__ import annotations

import shlex
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError

# How reports are archived, and the command that unpacks them next to the archive (kept).
_UNPACK = {
    ".tar.gz": "tar -xzf",
    ".tgz": "tar -xzf",
    ".tar.xz": "tar -xJf",
    ".tar.zst": "tar --zstd -xf",
    ".tar": "tar -xf",
    ".xz": "xz -dk",
    ".gz": "gunzip -k",
    ".zst": "zstd -dk",
    ".bz2": "bunzip2 -k",
    ".zip": "unzip",
}


def _archive(path: Path) -> str | None:
    """The archive suffix of a file that may hold reports, or None."""
    name = path.name
    if not any(part in name for part in (".nsys-rep", ".sqlite")) and ".tar" not in name:
        return None
    return next((suffix for suffix in _UNPACK if name.endswith(suffix)), None)


def unpack_hint(files: list[Path]) -> str:
    """'; 2 are compressed reports, which analyze does not read: unpack them first: xz -dk
    DIR/*.sqlite.xz' for archived reports among `files`, or ''. Exports are often archived, and
    "no reports" alone leaves the user guessing."""
    archived = sorted(path for path in files if _archive(path))
    if not archived:
        return ""
    commands = []
    for suffix in dict.fromkeys(str(_archive(path)) for path in archived):
        group = [path for path in archived if path.name.endswith(suffix)]
        folder = shlex.quote(str(group[0].parent))
        if suffix.startswith((".tar", ".tgz")):  # tar takes one archive per call
            commands += [f"{_UNPACK[suffix]} {shlex.quote(str(p))} -C {folder}" for p in group]
        elif len(group) > 1:
            kinds = sorted({p.name.rsplit(".", 2)[-2] for p in group})
            middle = f".{kinds[0]}" if len(kinds) == 1 else ""
            commands.append(f"{_UNPACK[suffix]} {folder}/*{middle}{suffix}")
        else:
            commands.append(f"{_UNPACK[suffix]} {shlex.quote(str(group[0]))}")
    return (
        f"; {len(archived)} compressed report file(s), which analyze does not read: unpack "
        f"them first: {'; '.join(commands)}"
    )


def report_sources(path: Path) -> list[tuple[Path | None, Path | None]]:
    """(report, its SQLite export) for every report at `path`, each report once.

    A report and its export (`x.nsys-rep` and `x.sqlite`, as `nsys export` names them) are one
    report: reading both would count every call twice.
    """
    if not path.exists():
        raise AnalyzeError(f"{path}: no such file or folder")
    if path.is_file() and path.suffix == ".sqlite":
        # An export named on the command line is read as given.
        return [(None, path)]
    if path.is_dir():
        reports, exports = list(path.glob("*.nsys-rep")), list(path.glob("*.sqlite"))
    elif path.suffix == ".nsys-rep":
        reports, exports = [path], [path.with_suffix(".sqlite")]
    else:
        raise AnalyzeError(
            f"{path}: not a report (allowed: .nsys-rep, .sqlite, or a folder){unpack_hint([path])}"
        )
    # Hidden files are nsysgen's own exports in progress (export_sqlite).
    reports = [r for r in reports if not r.name.startswith(".")]
    exports = [e for e in exports if not e.name.startswith(".")]
    by_report = {r.with_suffix(""): r for r in reports if r.is_file()}
    by_export = {e.with_suffix(""): e for e in exports if e.is_file()}
    return [(by_report.get(stem), by_export.get(stem)) for stem in sorted({*by_report, *by_export})]
