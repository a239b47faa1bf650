"""`nsysgen check`: is every folder under output_dir exactly what its manifest compiles to today?"""

from __future__ import annotations

import contextlib
import difflib
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from nsysgen.config.compose import Composer
from nsysgen.drivers import check_shared
from nsysgen.drivers.build import POINT_COMMAND, SWEEP_INDEX, read_sweep_index
from nsysgen.drivers.pipeline import Compiled, compile_config
from nsysgen.errors import NsysgenError
from nsysgen.output.config_inputs import changed_keys
from nsysgen.output.manifest import MANIFEST_NAME, Manifest, file_mode, sha256
from nsysgen.output.render import RenderedFile
from nsysgen.output.shared import needed

Kind = Literal[
    "changed", "edited by hand", "missing", "orphaned", "invalid", "incomplete", "input changed"
]


@dataclass(frozen=True)
class Drift:
    """A compiled folder that no longer matches what its manifest recompiles to."""

    path: Path
    kind: Kind
    regenerate: str
    detail: str = ""  # a unified diff, or the reason

    def __str__(self) -> str:
        if self.kind == "input changed":
            return f"{self.path}: cause: {self.detail} (regenerate: {self.regenerate})"
        head = f"{self.path}: {self.kind} (regenerate: {self.regenerate})"
        return f"{head}\n{self.detail}" if self.detail else head


@dataclass
class CheckReport:
    folders: int
    files: int
    findings: list[Drift]


class Composers:
    """One composer per set of user config directories (each composes with its own cache)."""

    def __init__(self) -> None:
        self._by_dirs: dict[tuple[str, ...], Composer] = {}

    def get(self, config_dirs: tuple[str, ...]) -> Composer:
        if config_dirs not in self._by_dirs:
            self._by_dirs[config_dirs] = Composer([Path(d) for d in config_dirs])
        return self._by_dirs[config_dirs]


def _diff(expected: bytes, actual: bytes, name: str) -> str:
    lines = difflib.unified_diff(
        actual.decode(errors="replace").splitlines(keepends=True),
        expected.decode(errors="replace").splitlines(keepends=True),
        fromfile=f"{name} (on disk)",
        tofile=f"{name} (compiled now)",
    )
    text = "".join(lines)
    return text if text.endswith("\n") or not text else text + "\n"


def regenerate_hint(command: str, output_dir: Path, root: Path | None = None) -> str:
    """The command that rewrites a folder where it is. The recorded command leaves output_dir
    out (the files must not depend on where they are written), so it is added back; `root` is
    the directory the compile ran in, when relative --config-dir paths or training scripts
    depend on it: the command then runs there."""
    if root is None or root.resolve() == Path.cwd().resolve():
        return f"{command} {shlex.quote(f'output_dir={output_dir}')}"
    relative = os.path.relpath(output_dir.resolve(), root.resolve())
    return (
        f"cd {shlex.quote(str(root.resolve()))} && "
        f"{command} {shlex.quote(f'output_dir={relative}')}"
    )


def _root_of(folder: Path, manifest: Manifest) -> Path | None:
    return folder / manifest.root if manifest.root else None


def folder_hint(folder: Path, manifest: Manifest) -> str:
    """The regenerate command for one folder. A sweep point records only a pointer to its
    sweep index (so adding a point leaves the others' bytes alone): the index's command is the
    one that rewrites it, from the folder above the sweep."""
    root = _root_of(folder, manifest)
    if manifest.command != POINT_COMMAND:
        return regenerate_hint(manifest.command, folder.parent, root)
    try:
        command = str(read_sweep_index(folder.parent / SWEEP_INDEX)["command"])
    except NsysgenError:
        return manifest.command  # no usable index: its pointer is all there is to say
    return regenerate_hint(command, folder.parent.parent, root)


def regenerate_verb(output_dir: Path) -> str:
    return f"nsysgen regenerate {shlex.quote(f'output_dir={output_dir}')}"


def recompile(folder: Path, composers: Composers) -> tuple[Manifest, Compiled] | Drift:
    """What the folder's manifest compiles to today, or why it cannot be compiled."""
    try:
        manifest = Manifest.read(folder / MANIFEST_NAME)
    except NsysgenError as error:
        return Drift(folder, "invalid", "restore the manifest", error.user_message())
    # Relative --config-dir paths and training scripts are relative to where the compile ran.
    base = (folder / manifest.root).resolve() if manifest.root else Path.cwd()
    try:
        with _working_directory(base):
            composer = composers.get(tuple(str(base / d) for d in manifest.config_dirs))
            composed = composer.compose(list(manifest.overrides))
            compiled = compile_config(
                composed, manifest.command, manifest.config_dirs, root=manifest.root
            )
    except NsysgenError as error:
        return Drift(folder, "invalid", folder_hint(folder, manifest), error.user_message())
    return manifest, compiled


def changed_inputs(manifest: Manifest, compiled: Compiled) -> list[str]:
    """The input files (training scripts, user configs) whose content changed since the
    folder was compiled: the cause of every difference they make."""
    return [
        source
        for source, digest in sorted(compiled.manifest.inputs.items())
        if manifest.inputs.get(source) not in (None, digest)
    ]


def describe_input(name: str, manifest: Manifest, compiled: Compiled) -> str:
    """What changed in one input: for a --config-dir file, each key with its old and new value
    (the manifest records them), so the user sees the edit before the files it changed."""
    before, after = manifest.input_keys.get(name), compiled.manifest.input_keys.get(name)
    patch = compiled.config.training_patch
    if patch is not None and name == patch.source:
        # A training script: its digest is of what nsysgen decided from it, not of its text.
        return (
            f"what nsysgen decides from {name} changed since this folder was compiled (the "
            "step loop or its line, the step numbering, the library, or the patch)"
        )
    if before is None or after is None:
        return f"{name} changed since this folder was compiled"
    keys = changed_keys(before, after)
    if not keys:
        return f"{name} changed (no value did: comments or layout only)"
    return f"{name} changed: {', '.join(keys)}"


FolderCheck = tuple[int, list[Drift], tuple[RenderedFile, ...] | None]


def check_folder(folder: Path, composers: Composers) -> FolderCheck:
    """(files checked, findings, the shared files it needs at the output root: None where it
    cannot be recompiled)."""
    recompiled = recompile(folder, composers)
    if isinstance(recompiled, Drift):
        return 0, [recompiled], None
    manifest, compiled = recompiled
    hint = folder_hint(folder, manifest)
    findings = _compare_all(folder, compiled, manifest, hint)
    inputs = changed_inputs(manifest, compiled)
    if inputs and findings:
        # One line for the cause; the files it changed follow it.
        causes = "; ".join(describe_input(name, manifest, compiled) for name in inputs)
        cause = Drift(folder, "input changed", hint, causes)
        findings = [cause, *findings]
    return len(compiled.files) + 1, findings, compiled.shared


def _compare_all(
    folder: Path, compiled: Compiled, manifest: Manifest, regenerate: str
) -> list[Drift]:
    expected: list[tuple[str, bytes, int]] = [
        (f.path, f.text.encode(), file_mode(f.executable)) for f in compiled.files
    ]
    expected.append((MANIFEST_NAME, compiled.manifest.to_text().encode(), 0o644))
    findings = list(_compare(folder, expected, manifest, regenerate))
    planned = {name for name, _, _ in expected}
    for name in sorted(set(manifest.files) - planned):
        if (folder / name).is_file():
            findings.append(
                Drift(
                    folder / name, "orphaned", regenerate, "written by nsysgen, no longer planned"
                )
            )
    return findings


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    try:
        os.chdir(path)
    except OSError as exc:
        raise NsysgenError(f"error: {path}: {exc.strerror}") from None
    try:
        yield
    finally:
        os.chdir(previous)


def _compare(
    folder: Path, expected: list[tuple[str, bytes, int]], manifest: Manifest, regenerate: str
) -> Iterator[Drift]:
    for name, data, mode in expected:
        path = folder / name
        if not path.is_file():
            yield Drift(path, "missing", regenerate)
            continue
        actual = path.read_bytes()
        actual_mode = path.stat().st_mode & 0o777
        if actual == data and actual_mode == mode:
            continue
        record = manifest.files.get(name)
        hand_edited = name != MANIFEST_NAME and (record is None or record.sha256 != sha256(actual))
        detail = _diff(data, actual, name) or f"mode {actual_mode:04o}, expected {mode:04o}\n"
        yield Drift(
            path, "edited by hand" if hand_edited else "changed", regenerate, detail.rstrip("\n")
        )


def _check_sweep_index(index_path: Path) -> list[Drift]:
    try:
        index = read_sweep_index(index_path)
    except NsysgenError as error:
        return [Drift(index_path, "invalid", "restore the index", error.user_message())]
    root = index_path.parent
    command = regenerate_hint(index["command"], root.parent, _sweep_root(root, index))
    findings = []
    if index.get("complete") is False:
        findings.append(
            Drift(root, "incomplete", command, "the sweep stopped before every point was written")
        )
    for slug, overrides in sorted(index["points"].items()):
        manifest_path = root / slug / MANIFEST_NAME
        if not manifest_path.is_file():
            findings.append(Drift(root / slug, "missing", command, "sweep point"))
            continue
        try:
            manifest = Manifest.read(manifest_path)
        except NsysgenError:
            continue  # check_folder reports it
        if list(manifest.overrides) != overrides:
            findings.append(
                Drift(root / slug, "changed", command, _other_overrides(manifest, overrides))
            )
    for manifest_path in sorted(root.glob(f"*/{MANIFEST_NAME}")):
        if manifest_path.parent.name not in index["points"]:
            findings.append(
                Drift(
                    manifest_path.parent, "orphaned", command, "sweep point no longer in the sweep"
                )
            )
    return findings


def _other_overrides(manifest: Manifest, overrides: list[str]) -> str:
    """Which overrides of a point differ between its manifest and the sweep's index."""
    was = [o for o in manifest.overrides if o not in overrides]
    now = [o for o in overrides if o not in manifest.overrides]
    detail = "point compiled from other overrides"
    if was or now:
        detail += f": {' '.join(was) or '(none)'} (the sweep now has: {' '.join(now) or 'none'})"
    return detail


def _sweep_root(root: Path, index: dict[str, Any]) -> Path | None:
    """Where the sweep was compiled: the index does not record it, its points do."""
    for slug in sorted(index["points"]):
        with contextlib.suppress(NsysgenError):
            manifest = Manifest.read(root / slug / MANIFEST_NAME)
            return _root_of(root / slug, manifest)
    return None


def check_output(output_dir: Path) -> CheckReport:
    if not output_dir.is_dir():
        raise NsysgenError(f"error: output_dir {output_dir} does not exist")
    composers = Composers()
    report = CheckReport(folders=0, files=0, findings=[])
    shared: list[RenderedFile] = []
    known = True  # every folder's needs known (none failed to recompile)
    for manifest_path in sorted(output_dir.rglob(MANIFEST_NAME)):
        files, findings, needs = check_folder(manifest_path.parent, composers)
        report.folders += 1
        report.files += files
        report.findings += findings
        shared += needs or ()
        known = known and needs is not None
    for index_path in sorted(output_dir.rglob(SWEEP_INDEX)):
        report.findings += _check_sweep_index(index_path)
    if report.folders:
        report.findings += _shared_findings(output_dir, shared, known)
        report.files += len(needed(shared))
    return report


def _shared_findings(output_dir: Path, shared: list[RenderedFile], known: bool) -> list[Drift]:
    verb = regenerate_verb(output_dir)
    found = [
        Drift(output_dir / file.path, state, verb, "shared by every folder")
        for file, state in check_shared.states(output_dir, shared)
        if state != "current"
    ]
    if known:
        found += [
            Drift(path, "orphaned", verb, "a shared helper no folder needs any more")
            for path in check_shared.orphans(output_dir, shared)
        ]
    return found


def render_report(report: CheckReport, output_dir: Path) -> str:
    if not report.findings:
        return (
            f"nsysgen check: {report.folders} folders, {report.files} files current in {output_dir}"
        )
    lines = [str(finding) for finding in report.findings]
    causes = [f for f in report.findings if f.kind == "input changed"]
    count = len(report.findings) - len(causes)
    stale = len({f.path for f in causes})
    because = f"; {stale} folder(s) because an input file changed" if causes else ""
    lines.append(
        f"nsysgen check: {count} problem{'s' if count != 1 else ''} in {output_dir}{because} "
        f"({regenerate_verb(output_dir)} rewrites every stale folder; or undo the hand edits)"
    )
    return "\n".join(lines)
