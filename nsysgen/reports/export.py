"""A report's SQLite export, made one way by `nsysgen analyze` and the shipped verifier, so that
each reuses the other's: the same switches, the same name (x.nsys-rep -> x.sqlite), and never
half an export under that name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# The switches the analysis needs, where this nsys's export has them: `--include-blobs true`
# (2025.x) exports NCCL's NVTX payloads, which hold the message sizes; `--include-json true`
# (2025.6.1+) the composite tables of advanced NCCL tracing (NCCL_GPU_OPERATIONS, with each
# collective's operationId). nsys 2023.4.4 has neither, and refuses a switch it does not know.
EXPORT_SWITCHES = ("--include-blobs", "--include-json")
_SWITCHES: dict[str, tuple[str, ...]] = {}


class NoNsys(Exception):
    """An nsys named by the user (a flag, $NSYS) that is not there: the message says which."""


def find_nsys(explicit: str | None, setup: str | None = None, flag: str = "--nsys") -> str | None:
    """The nsys to export with: `explicit` (the command line's `flag`), else $NSYS, else the
    setup's (its cluster path, often absent where the reports are read), else nsys on PATH.
    A name without a slash is looked up on PATH. None: no nsys anywhere. The user's own choice
    (flag or variable) that is not there is an error, not passed over for another nsys."""
    for given, what in ((explicit, flag), (os.environ.get("NSYS"), "NSYS")):
        if given:
            found = _executable(given)
            if found is None:
                raise NoNsys(f"{what} {given}: no such executable")
            return found
    found = _executable(setup) if setup else None
    return found or shutil.which("nsys")


def _executable(name: str) -> str | None:
    if "/" not in name:
        return shutil.which(name)
    return name if Path(name).is_file() and os.access(name, os.X_OK) else None


def export_switches(nsys: str) -> tuple[str, ...]:
    """EXPORT_SWITCHES that `nsys export --help` lists, each with `true`; asked once per nsys."""
    if nsys not in _SWITCHES:
        proc = subprocess.run(
            [nsys, "export", "--help"], capture_output=True, text=True, check=False
        )
        text = proc.stdout + proc.stderr
        _SWITCHES[nsys] = tuple(
            part for switch in EXPORT_SWITCHES if switch in text for part in (switch, "true")
        )
    return _SWITCHES[nsys]


def export_path(report: Path) -> Path:
    """Where a report's export goes: beside it, as `nsys export` names it."""
    return report.with_suffix(".sqlite")


def is_current(report: Path, export: Path) -> bool:
    """An export no older than its report: made from it (nsysgen analyze keys its own exports
    more strictly, nsysgen/analyze/read/cache.py, and falls back to this rule for others)."""
    return export.is_file() and export.stat().st_mtime >= report.stat().st_mtime


def make_export(nsys: str, report: Path) -> tuple[Path | None, str]:
    """Export `report` with `nsys` now: (its export, "") or (None, what nsys said: its exit
    code and last words, for the caller to frame).

    nsys writes a hidden name that is renamed into place once whole: a failed export leaves
    part of one (nsys 2023.4.4 on a damaged report: an empty file, or the tables it wrote before
    it stopped), newer than the report, which would be taken for the report's current export;
    and a reader (another worker, another verb) never sees half an export.
    """
    target = export_path(report)
    partial = report.with_name(f".{report.stem}.{os.getpid()}.partial.sqlite")
    try:
        proc = subprocess.run(
            [nsys, "export", "--type", "sqlite", "--force-overwrite", "true"]
            + list(export_switches(nsys))
            + ["--output", str(partial), str(report)],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as error:  # not a program, or the kernel refused it (seen: EFAULT on exec
        # with 2,000 exports under way): the report is not read, and says why
        return None, f"{nsys} could not be started ({error.strerror or error})"
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        # nsys prints its error on stdout or stderr, among progress lines ("[1/3] [==  ] 40%").
        lines = [x for x in (proc.stdout + proc.stderr).splitlines() if "%" not in x]
        return None, f"exit {proc.returncode}: {' '.join(lines)[-300:]}"
    partial.replace(target)
    return target, ""


def current_export(nsys: str | None, report: Path) -> tuple[Path | None, str]:
    """The report's export: an up-to-date one beside it, else made now; (None, why) if it
    cannot be had."""
    target = export_path(report)
    if is_current(report, target):
        return target, ""
    if not nsys:
        return None, "no nsys to read it (set NSYS or pass --nsys)"
    made, said = make_export(nsys, report)
    return made, (f"nsys export failed ({said})" if made is None else "")
