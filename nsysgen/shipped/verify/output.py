"""The result as a table for people and as JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from nsysgen.shipped.verify.model import (
    Result,
)


def as_json(result: Result) -> str:
    data = {
        "job": result.job,
        "job_id": result.job_id,
        "report_dir": result.report_dir,
        "nsys_version": result.nsys_version,
        "complete": result.complete,
        "exit_code": result.exit_code,
        "reports": [asdict(f) for f in result.findings if f.status != "extra"],
        "extras": [asdict(f) for f in result.findings if f.status == "extra"],
        "notes": result.notes,
    }
    return json.dumps(data, indent=1, sort_keys=True)


def as_table(result: Result) -> str:
    expected = [f for f in result.findings if f.status != "extra"]
    job = f"job {result.job}" + (f" ({result.job_id})" if result.job_id else "")
    lines = [f"verify: {job}: {len(expected)} reports expected in {result.report_dir}"]
    rows = [(f.label, f.node, f.status.upper(), f.report or "-") for f in result.findings]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEAD)]
    lines.append(_row(_HEAD, widths))
    for finding, row in [(f, rows[i]) for i, f in enumerate(result.findings)]:
        lines.append(_row(row, widths))
        lines += [f"    problem: {p}" for p in finding.problems]
        lines += [f"    likely cause: {c}" for c in finding.causes]
        lines += [f"    note: {n}" for n in finding.notes]
    lines += [f"note: {n}" for n in result.notes]
    bad = [f for f in expected if f.status != "ok"]
    extras = len(result.findings) - len(expected)
    if result.complete:
        lines.append(f"verify: complete: {len(expected)} of {len(expected)} reports ok")
    else:
        lines.append(
            f"verify: INCOMPLETE: {len(bad)} of {len(expected)} reports missing or wrong, "
            f"{extras} unexpected"
        )
    return "\n".join(lines)


_HEAD = ("task", "node", "status", "report")


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells)).rstrip()
