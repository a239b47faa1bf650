"""A whole analysis, replayed when nothing it depends on changed.

When every report's result comes from the cache, the rest of `nsysgen analyze` (ranks, steps,
stragglers, summary.json, CSVs, pictures, the baseline gate) would compute what is already in
OUT. OUT/.nsysgen-run.json records what a run depended on (the code, every report's cached
result key, the options and the bytes of --nccl-tests-log and --baseline), the digest of each
file it wrote, the lines it printed and its exit code. A later run with the same key replays the
lines and the exit code if every recorded file is still there, byte for byte; anything else
(a changed option, report or file, an edited or missing output) runs the analysis again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from nsysgen import __version__

RECORD = ".nsysgen-run.json"


@functools.cache
def analysis_digest() -> str:
    """The source of every module a whole run's outputs come from (the per-report reduction,
    summary, verdict, pictures, the HTML report): a change to any of them runs the analysis
    again instead of replaying an older one's lines and files."""
    digest = hashlib.sha256()
    package = Path(__file__).parent
    try:
        for folder in (package, package.parent / "reports"):
            for module in sorted(folder.glob("*.py")):
                digest.update(module.name.encode() + b"\0" + module.read_bytes())
    except OSError:  # installed without its sources: the version stands in for them
        return f"nsysgen {__version__}"
    return digest.hexdigest()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _input_digest(path: Path | None) -> str | None:
    """The bytes of an input file (a --baseline folder: its summary.json)."""
    if path is None:
        return None
    target = path / "summary.json" if path.is_dir() else path
    try:
        return _file_digest(target)
    except OSError:
        return "unreadable"


def run_key(result_keys: list[Any], options: dict[str, Any], inputs: list[Path | None]) -> str:
    """What a run's outputs depend on, as one digest."""
    text = json.dumps(
        [analysis_digest(), result_keys, options, [_input_digest(p) for p in inputs]],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def replay(out: Path, key: str) -> tuple[list[str], int] | None:
    """The printed lines and exit code of the recorded run with this key, if its outputs are
    all still as it wrote them; else None (run the analysis)."""
    try:
        saved = json.loads((out / RECORD).read_text())
        if saved["key"] != key:
            return None
        for name, digest in saved["outputs"].items():
            path = out / name
            if Path(name).is_absolute() or ".." in Path(name).parts or not path.is_file():
                return None
            if _file_digest(path) != digest:
                return None
        lines, code = saved["lines"], saved["code"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(code, int) or not all(isinstance(line, str) for line in lines):
        return None
    return lines, code


def save(out: Path, key: str, outputs: list[Path], lines: list[str], code: int) -> None:
    """Record a run (best effort, atomic); outputs outside OUT make it unrecordable."""
    names: dict[str, str] = {}
    root = out.resolve()
    for path in outputs:
        try:
            name = path.resolve().relative_to(root).as_posix()
            names[name] = _file_digest(path)
        except (ValueError, OSError):
            return
    target = out / RECORD
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    data = {"key": key, "outputs": names, "lines": lines, "code": code}
    try:
        partial.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        partial.replace(target)
    except OSError:  # a read-only folder, a full disk: the next run computes it again
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
