"""`nsysgen [compile]`: one folder or a sweep, its warnings and the summary lines."""

from __future__ import annotations

import sys

from nsysgen.cli.args import Arguments
from nsysgen.config.compose import Composer
from nsysgen.drivers.build import FolderResult, SweepResult, build_single, build_sweep
from nsysgen.errors import EXIT_OK


def _sweep_summary(sweep: SweepResult) -> str:
    kinds = {"new": 0, "changed": 0, "unchanged": 0}
    files: dict[str, int] = {}
    for result in sweep.folders:
        statuses = {s.status for s in result.statuses}
        if statuses <= {"created"}:
            kinds["new"] += 1
        elif statuses <= {"identical", "kept"}:
            kinds["unchanged"] += 1
        else:
            kinds["changed"] += 1
        for status in result.statuses:
            files[status.status] = files.get(status.status, 0) + 1
    points = ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n)
    line = f"{sweep.root}: sweep of {sweep.points} points ({points})"
    if sweep.removed:
        line += f"; removed {len(sweep.removed)} point(s) no longer in the sweep"
    return f"{line}; files: {_file_counts(files)}"


def _file_counts(counts: dict[str, int]) -> str:
    order = ("created", "updated", "removed", "kept", "identical")
    names = {"identical": "unchanged", "kept": "kept (edited by hand)"}
    return ", ".join(f"{counts[s]} {names.get(s, s)}" for s in order if counts.get(s))


def print_warnings(results: list[FolderResult]) -> None:
    seen = set()
    for result in results:
        for warning in result.warnings:
            line = (
                f"warning: {warning.path}: [{warning.lint}] {warning.message} (fix: {warning.fix})"
            )
            if line not in seen:
                seen.add(line)
                print(line, file=sys.stderr)


def run_compile(args: Arguments, composer: Composer) -> int:

    if args.multirun:
        sweep = build_sweep(composer, args.overrides, args.config_dirs)
        print_warnings(sweep.folders)
        print(_sweep_summary(sweep))
        return EXIT_OK
    result = build_single(composer, args.overrides, args.config_dirs)
    print_warnings([result])
    counts: dict[str, int] = {}
    for status in result.statuses:
        counts[status.status] = counts.get(status.status, 0) + 1
    summary = _file_counts(counts) if set(counts) - {"identical"} else "unchanged"
    for what, how in result.steps:  # how the steps are found, before the run
        print(f"{what}: {how}")
    if result.records:
        print(f"a run records: {result.records}")
    print(f"{result.folder}: {len(result.statuses)} files ({summary})")
    for line in result.notes:
        print(line)
    return EXIT_OK
