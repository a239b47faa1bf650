"""Compile one config or a whole sweep and write the folders: what `nsysgen [-m] ...` does."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysgen import __version__
from nsysgen.compose import Composer
from nsysgen.errors import InvalidConfig, NsysgenError
from nsysgen.lints import Finding
from nsysgen.manifest import TamperedFile, is_safe_relative, load_json
from nsysgen.pipeline import Compiled, compile_config, regenerate_command
from nsysgen.sweep import expand
from nsysgen.write import FileStatus, OutputError, output_lock, remove_folder, write_folder

SWEEP_INDEX = "nsysgen-sweep.json"


@dataclass(frozen=True)
class FolderResult:
    folder: Path
    statuses: list[FileStatus]
    warnings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class SweepResult:
    root: Path
    points: int
    folders: list[FolderResult]  # every point, then any stale point removed


class InvalidSweep(NsysgenError):
    """Some points of a sweep are invalid; nothing was written."""

    def __init__(self, failures: list[tuple[str, InvalidConfig]], total: int) -> None:
        self.failures = failures
        self.total = total
        super().__init__(f"{len(failures)} of {total} sweep points are invalid")

    def user_message(self) -> str:
        lines = [f"error: {self}; nothing was written"]
        for slug, error in self.failures:
            lines.append(f"point {slug}:")
            lines += [f"  {issue}" for issue in error.issues]
        return "\n".join(lines)


def build_single(
    composer: Composer, args: Sequence[str], config_dirs: Sequence[str]
) -> FolderResult:
    composed = composer.compose(args)
    compiled = compile_config(composed, regenerate_command(args, config_dirs), config_dirs)
    output_dir = Path(compiled.config.output_dir)
    folder = output_dir / compiled.config.job.name
    with output_lock(output_dir):
        statuses = write_folder(folder, compiled.files, compiled.manifest)
    return FolderResult(folder, statuses, tuple(compiled.warnings))


class _Progress:
    """Progress on a terminal, for sweeps that take longer than a second."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.start = time.monotonic()
        self.shown = False

    def update(self, done: int, verb: str) -> None:
        if not sys.stderr.isatty() or time.monotonic() - self.start < 1.0:
            return
        if done == self.total or done % 25 == 0:
            print(f"\rnsysgen: {verb} {done}/{self.total} points", end="", file=sys.stderr)
            self.shown = True

    def finish(self) -> None:
        if self.shown:
            print(file=sys.stderr)


def build_sweep(composer: Composer, args: Sequence[str], config_dirs: Sequence[str]) -> SweepResult:
    """Compile every point in memory; write only if all are valid."""
    sweep = expand(composer, args)
    points = sweep.points
    root_config = composer.compose(sweep.fixed)
    root_name = str(root_config.data["job"]["name"])
    output_dir = Path(str(root_config.data["output_dir"]))
    command = regenerate_command(args, config_dirs, multirun=True)
    progress = _Progress(len(points))
    compiled: list[tuple[str, Compiled]] = []
    failures: list[tuple[str, InvalidConfig]] = []
    for index, point in enumerate(points, start=1):
        slug = point.slug()
        overrides = [*point.overrides, f"job.name={root_name}_{slug}"]
        try:
            compiled.append(
                (slug, compile_config(composer.compose(overrides), command, config_dirs))
            )
        except InvalidConfig as error:
            failures.append((slug, error))
        progress.update(index, "compiled")
    if failures:
        progress.finish()
        raise InvalidSweep(failures, len(points))

    root = output_dir / root_name
    point_overrides = {slug: list(c.manifest.overrides) for slug, c in compiled}
    with output_lock(output_dir):
        if root.is_symlink():
            raise OutputError(f"{root} is a symbolic link; nsysgen writes only real folders")
        previous = read_sweep_index(root / SWEEP_INDEX) if (root / SWEEP_INDEX).is_file() else None
        # The index says "incomplete" until every point is written: a sweep killed midway
        # leaves an index that `nsysgen check` reports, never a mixed tree that passes.
        _write_index(root, command, args, point_overrides, complete=False)
        results = []
        for index, (slug, point_files) in enumerate(compiled, start=1):
            folder = root / slug
            statuses = write_folder(folder, point_files.files, point_files.manifest)
            results.append(FolderResult(folder, statuses, tuple(point_files.warnings)))
            progress.update(index, "wrote")
        progress.finish()
        stale = sorted(set(previous["points"]) - set(point_overrides)) if previous else []
        results += [FolderResult(root / slug, remove_folder(root / slug)) for slug in stale]
        _write_index(root, command, args, point_overrides, complete=True)
    return SweepResult(root, len(compiled), results)


def read_sweep_index(path: Path) -> dict[str, Any]:
    """A sweep index, checked: its point names must be folders directly under the sweep."""
    data = load_json(path)
    points = data.get("points")
    if not isinstance(points, dict) or not all(
        is_safe_relative(slug) and "/" not in slug and isinstance(overrides, list)
        for slug, overrides in points.items()
    ):
        raise TamperedFile(
            f"{path}: its points are not folder names of this sweep; restore the index from "
            "version control or delete it"
        )
    if not isinstance(data.get("command"), str):
        raise TamperedFile(f"{path}: not an nsysgen sweep index (no command)")
    return data


def sweep_index_text(
    command: str, args: Sequence[str], points: dict[str, list[str]], complete: bool = True
) -> str:
    data = {
        "generated_by": f"nsysgen {__version__}",
        "command": command,
        "args": [a for a in args if not a.startswith("output_dir=")],
        "points": points,
        "complete": complete,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _write_index(
    root: Path, command: str, args: Sequence[str], points: dict[str, list[str]], complete: bool
) -> None:
    text = sweep_index_text(command, args, points, complete)
    index_path = root / SWEEP_INDEX
    if index_path.is_file() and not index_path.is_symlink() and index_path.read_text() == text:
        return
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=root, prefix=f".{SWEEP_INDEX}.", delete=False) as tmp:
        tmp.write(text)
    Path(tmp.name).chmod(0o644)
    Path(tmp.name).replace(index_path)  # replaces a link at that name, never follows it
