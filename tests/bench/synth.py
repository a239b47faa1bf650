"""bench/synth_export.py for tests: a job's synthetic exports, one per rank, with a planted
straggler and a planted slow message size, analysed by `nsysgen analyze` as a user runs it.

    from tests.bench.synth import analyze, planted_job
    truths = planted_job(folder, ranks=8, late={5: {10: 30.0}}, slow_size=1 << 20)
    summary = analyze(run_cli, folder, out)
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.conftest import REPO, RunCli

SYNTH = REPO / "bench" / "synth_export.py"


@functools.cache
def synth() -> ModuleType:
    """bench/synth_export.py as a module (bench/ is scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("bench_synth_export", SYNTH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def planted_job(
    folder: Path,
    ranks: int,
    late: dict[int, dict[int, float]] | None = None,
    slow_size: int | None = None,
    **shape: Any,
) -> dict[int, Any]:
    """Write the job's exports into `folder`; each rank's figures as generated (`Truth`)."""
    module = synth()
    truths: dict[int, Any] = module.job(
        folder, module.Shape(ranks=ranks, **shape), module.Plant(late or {}, slow_size)
    )
    return truths


def analyze(run_cli: RunCli, folder: Path, out: Path, *extra: str) -> dict[str, Any]:
    """`nsysgen analyze FOLDER --output OUT EXTRA...`, which must succeed; its summary.json."""
    result = run_cli("analyze", str(folder), "--output", str(out), *extra)
    assert result.code == 0, result.out + result.err
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def step_of(summary: dict[str, Any], rank: int, number: int) -> dict[str, Any]:
    """Rank `rank`'s entry for step `number` in summary.json."""
    (entry,) = [r for r in summary["ranks"] if r["rank"] == rank]
    found: list[dict[str, Any]] = [s for s in entry["steps"] if s["step"] == number]
    assert len(found) == 1
    return found[0]


def by_size(summary: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """summary.json's nccl_by_size rows by message size (one collective in these jobs)."""
    return {row["size_bytes"]: row for row in summary["nccl_by_size"]}
