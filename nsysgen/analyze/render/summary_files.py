"""summary.json and the CSV tables beside it (steps.csv, ranks.csv, stragglers.csv,
nccl_bandwidth.csv), written from the summary that nsysgen/analyze/judge/summary.py builds."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import get_args

from nsysgen.analyze.judge.bandwidth import SizeColumn
from nsysgen.analyze.judge.summary_types import (
    MEDIAN_FIELDS,
    StepColumn,
    Summary,
    TotalsColumn,
)
from nsysgen.analyze.read.safe import cell


def write(summary: Summary, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    target = out / "summary.json"
    # One line: json's C encoder only writes unindented JSON, and a summary of 1000 ranks x 1000
    # steps holds a million step rows (steps.csv has them for reading).
    target.write_text(json.dumps(summary.as_json()) + "\n")
    written = [target]
    ranks = summary.ranks
    step_columns: tuple[StepColumn, ...] = get_args(StepColumn)
    written.append(
        _csv(
            out / "steps.csv",
            ["rank", "report", *step_columns],
            [
                [r["rank"], r["report"], *(s[c] for c in step_columns)]
                for r in ranks
                for s in r["steps"]
            ],
        )
    )
    total_columns: tuple[TotalsColumn, ...] = get_args(TotalsColumn)
    median_columns = [f"median_{name}" for name in MEDIAN_FIELDS]
    written.append(
        _csv(
            out / "ranks.csv",
            ["rank", "report", "pid", "device", *total_columns, *median_columns],
            [
                [
                    r["rank"],
                    r["report"],
                    r["pid"],
                    r["device"],
                    *(r["totals"][c] for c in total_columns),
                    *(r["medians_without_window_edges"].get(n) for n in MEDIAN_FIELDS),
                ]
                for r in ranks
            ],
        )
    )
    stragglers = summary.stragglers
    written.append(
        _csv(
            out / "stragglers.csv",
            ["rank", "kind", "steps", "mean_lateness_ms", "late_on_fraction_of_steps"],
            [
                [
                    s["rank"],
                    s["kind"],
                    " ".join(map(str, s["steps"])),
                    s["mean_lateness_ms"],
                    s["late_on_fraction_of_steps"],
                ]
                for s in stragglers
            ],
        )
    )
    sizes = summary.nccl_by_size
    size_columns: tuple[SizeColumn, ...] = get_args(SizeColumn)
    written.append(
        _csv(
            out / "nccl_bandwidth.csv",
            list(size_columns),
            [[s[c] for c in size_columns] for s in sizes],
        )
    )
    return written


def _csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else cell(v) for v in row])
    return path
