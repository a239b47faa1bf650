"""bench/stragglers_compare.py: the four definitions of lateness side by side on the same reports
(BENCHMARKS.md's table), run here on its scenarios; what each names and the size it gives."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO


def module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_stragglers_compare", REPO / "bench" / "stragglers_compare.py"
    )
    assert spec and spec.loader
    found = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = found
    spec.loader.exec_module(found)
    return found


def test_the_critical_path_gives_the_planted_size_where_the_others_do_not(tmp_path: Path) -> None:
    compare = module()
    rows = {row.scenario: row for row in compare.synthetic(tmp_path)}
    host = rows["2 ranks, rank 1 sleeps 25 ms before backward"]
    assert host.critical == "rank 1 (6/6 steps), 25.0 ms" and host.what_if == "25.0 ms"
    assert host.summed == "31.1 ms" and host.hta == "rank 1 (6/6 steps)"  # the sum overcounts
    node = rows["16 ranks, node 1 (ranks 8-15) 25 ms late"]
    assert node.critical == "8 ranks together, 25.0 ms"
    assert node.summed == "0.0 ms"  # ties among the last arrivers: the sum saw nobody
    assert rows["control, 8 ranks"].critical == "nobody late"
    table = compare.table(list(rows.values()))
    assert table.count("\n") == len(rows) + 1 and "| critical path (now) |" in table


def test_on_pipeline_stages_the_bubble_is_no_ones_lateness(tmp_path: Path) -> None:
    """GPipe stages (bench/synth_pp.py): the critical path prices the late rank at what the step
    grew, the control at nobody; TraceLens's skews, summed over kernels that are no one
    collective across stages, count the bubble (tens of ms on the control)."""
    rows = {row.scenario: row for row in module().pipeline(tmp_path)}
    assert rows["control, 8 ranks in 2 pipeline stages"].critical == "nobody late"
    last = rows["8 ranks in 2 stages, rank 5 (last stage) sleeps 25 ms"]
    assert last.critical == "rank 5 (6/6 steps), 25.0 ms" and last.what_if == "25.0 ms"
    first = rows["8 ranks in 2 stages, rank 1 (first stage) sleeps 25 ms"]
    assert first.critical.startswith("rank 1 (6/6 steps)") and first.grew_ms is not None
    assert abs(float(first.critical.split(", ")[1].removesuffix(" ms")) - first.grew_ms) < 1.0
    assert float(rows["control, 8 ranks in 2 pipeline stages"].tracelens.split()[0]) > 10.0
