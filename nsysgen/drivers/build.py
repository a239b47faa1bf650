"""Compile one config or a whole sweep and write the folders: what `nsysgen [-m] ...` does."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysgen import __version__
from nsysgen.config.compose import Composed, Composer
from nsysgen.config.sweep import expand
from nsysgen.drivers.pipeline import Compiled, compile_config, regenerate_command
from nsysgen.errors import ComposeError, InvalidConfig, NsysgenError
from nsysgen.output.manifest import TamperedFile, is_safe_relative, load_json
from nsysgen.output.shared import write_shared
from nsysgen.output.write import FileStatus, OutputError, output_lock, remove_folder, write_folder
from nsysgen.profile.lints import Finding

SWEEP_INDEX = "nsysgen-sweep.json"
# What a sweep point's files and manifest record as their command. Points name the index, not
# the sweep's command: adding a value to a sweep then changes the index and the new folders, and
# leaves every other point's files as they were.
POINT_COMMAND = f"# a point of a sweep: regenerate with the command in ../{SWEEP_INDEX}"


@dataclass(frozen=True)
class FolderResult:
    folder: Path
    statuses: list[FileStatus]
    warnings: tuple[Finding, ...] = ()
    steps: tuple[tuple[str, str], ...] = ()  # how the steps are found (capture=steps)
    # what the target asks the user to do beyond the files (Target.notes), printed
    notes: tuple[str, ...] = ()
    # what a run records, in reports and ranks (printed: a per-node launch records more)
    records: str = ""


@dataclass(frozen=True)
class SweepResult:
    root: Path
    points: int
    folders: list[FolderResult]  # every point
    removed: list[FolderResult]  # points of the previous sweep that are gone


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
    folder = _folder_of(composed)
    compiled = compile_config(
        composed,
        regenerate_command(args, config_dirs),
        config_dirs,
        root=_root(folder, config_dirs),
    )
    output_dir = Path(compiled.config.output_dir)
    with output_lock(output_dir):
        statuses = write_folder(folder, compiled.files, compiled.manifest)
        write_shared(output_dir, compiled.shared)
    notes: tuple[str, ...] = ()
    records = ""
    if compiled.plan is not None and compiled.target is not None:
        notes = compiled.target.notes(compiled.config, compiled.plan, str(folder.resolve()))
        records = compiled.plan.recorded_ranks.text()
    return FolderResult(folder, statuses, tuple(compiled.warnings), compiled.steps, notes, records)


def _folder_of(composed: Composed) -> Path:
    """The folder the config names. Before validation, which reports a deleted `~output_dir`
    or `~job.name` with the allowed values: until then a stand-in keeps the path computable."""
    job = composed.data.get("job")
    name = job.get("name") if isinstance(job, dict) else None
    return Path(str(composed.data.get("output_dir") or ".")) / str(name or "job")


def _root(folder: Path, config_dirs: Sequence[str]) -> str:
    """The working directory, relative to `folder`: where `check` finds relative --config-dir
    paths and training scripts again, from any directory (the manifest keeps it only for
    compiles that read such paths)."""
    return os.path.relpath(Path.cwd(), folder.absolute())


@dataclass(frozen=True)
class NamedPoint:
    name: str  # folder under the sweep root
    overrides: tuple[str, ...]
    job_name: str  # the point's own job name (from its own config) + its name


def name_points(composer: Composer, args: Sequence[str]) -> tuple[str, list[NamedPoint]]:
    """(sweep root folder name, points): each point's job is named from its own config, so a
    sweep over clusters names the p4de job after p4de; the root holds what they share."""
    sweep = expand(composer, args)
    if not sweep.points:
        raise ComposeError(f"{' '.join(args)}: the sweep has no points (an empty range or list)")
    own = [str(composer.compose(p.overrides).data["job"]["name"]) for p in sweep.points]
    points = [
        NamedPoint(point.slug(), point.overrides, point_job_name(name, point.slug()))
        for point, name in zip(sweep.points, own, strict=True)
    ]
    return merged_name(own), points


def point_job_name(name: str, slug: str) -> str:
    """A sweep point's job name: its config's, then the point's values, in the characters every
    target's job names allow (Kubernetes: a DNS-1035 label; `_` and `.` are not in it)."""
    values = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", slug.lower())).strip("-")
    return f"{name}-{values}"


def merged_name(names: Sequence[str]) -> str:
    """One name for several: the common leading and trailing parts, the rest joined by "+"
    (nccl-p4de-slurm and nccl-p5-slurm -> nccl-p4de+p5-slurm)."""
    distinct = list(dict.fromkeys(names))
    if len(distinct) <= 1:
        return distinct[0] if distinct else "sweep"
    parts = [name.split("-") for name in distinct]
    head = 0
    while all(len(p) > head + 1 and p[head] == parts[0][head] for p in parts):
        head += 1
    tail = 0
    while all(len(p) > head + tail + 1 and p[-1 - tail] == parts[0][-1 - tail] for p in parts):
        tail += 1
    middles = ["-".join(p[head : len(p) - tail]) for p in parts]
    return "-".join([*parts[0][:head], "+".join(middles), *parts[0][len(parts[0]) - tail :]])


def natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders delay-30 before delay-120."""
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text) if t]


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
    root_name, points = name_points(composer, args)
    first = composer.compose(points[0].overrides) if points else composer.compose([])
    output_dir = Path(str(first.data["output_dir"]))
    root = output_dir / root_name
    command = regenerate_command(args, config_dirs, multirun=True)
    progress = _Progress(len(points))
    compiled: list[tuple[str, Compiled]] = []
    failures: list[tuple[str, InvalidConfig]] = []
    for index, point in enumerate(points, start=1):
        try:
            composed = composer.compose(point.overrides, values={"job.name": point.job_name})
            compiled.append(
                (
                    point.name,
                    compile_config(
                        composed,
                        POINT_COMMAND,
                        config_dirs,
                        root=_root(root / point.name, config_dirs),
                    ),
                )
            )
        except InvalidConfig as error:
            failures.append((point.name, error))
        progress.update(index, "compiled")
    if failures:
        progress.finish()
        raise InvalidSweep(failures, len(points))

    point_overrides = {name: list(c.manifest.overrides) for name, c in compiled}
    with output_lock(output_dir):
        if root.is_symlink():
            raise OutputError(f"{root} is a symbolic link; nsysgen writes only real folders")
        previous = read_sweep_index(root / SWEEP_INDEX) if (root / SWEEP_INDEX).is_file() else None
        # The index says "incomplete" until every point is written: a sweep killed midway
        # leaves an index that `nsysgen check` reports, never a mixed tree that passes.
        _write_index(root, command, args, point_overrides, complete=False)
        results = []
        for index, (name, point_files) in enumerate(compiled, start=1):
            folder = root / name
            statuses = write_folder(folder, point_files.files, point_files.manifest)
            results.append(FolderResult(folder, statuses, tuple(point_files.warnings)))
            progress.update(index, "wrote")
        progress.finish()
        stale = sorted(set(previous["points"]) - set(point_overrides)) if previous else []
        removed = [FolderResult(root / name, remove_folder(root / name)) for name in stale]
        _write_index(root, command, args, point_overrides, complete=True)
        write_shared(output_dir, [f for _, point in compiled for f in point.shared])
    return SweepResult(root, len(compiled), results, removed)


def read_sweep_index(path: Path) -> dict[str, Any]:
    """A sweep index, checked: its point names must be folders directly under the sweep.
    Returns it with "points" as a dict name -> overrides."""
    data = load_json(path)
    points = data.get("points")
    if isinstance(points, list):  # [{"name": ..., "overrides": [...]}, ...] in natural order
        try:
            points = {str(p["name"]): p["overrides"] for p in points}
        except (TypeError, KeyError):
            points = None
    if not isinstance(points, dict) or not all(
        is_safe_relative(name) and "/" not in name and isinstance(overrides, list)
        for name, overrides in points.items()
    ):
        raise TamperedFile(
            f"{path}: its points are not folder names of this sweep; restore the index from "
            "version control or delete it"
        )
    if not isinstance(data.get("command"), str):
        raise TamperedFile(f"{path}: not an nsysgen sweep index (no command)")
    return {**data, "points": points}


def sweep_index_text(
    command: str, args: Sequence[str], points: dict[str, list[str]], complete: bool = True
) -> str:
    data = {
        "generated_by": f"nsysgen {__version__}",
        "command": command,
        "args": [a for a in args if not a.startswith("output_dir=")],
        "points": [
            {"name": name, "overrides": points[name]} for name in sorted(points, key=natural_key)
        ],
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
