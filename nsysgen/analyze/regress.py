"""`nsysgen analyze --baseline OLD_OUT`: compare with an earlier summary.json, fail on regressions.

Compared: each rank's median GPU step time and median exposed communication (first step left
out, as in the summary), the median over all ranks of both, and NCCL bus bandwidth per
(operation, message size). A time regresses when it grows by more than `threshold` (a fraction)
AND by more than `min_ms` (so that a 20 us exposed-comm figure going to 30 us is not +50 % of
nothing); a bandwidth regresses when it drops by more than `threshold`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from nsysgen.analyze.nccl import AnalyzeError
from nsysgen.analyze.summary import SCHEMA, StepField, Summary


@dataclass(frozen=True)
class Change:
    what: str
    old: float
    new: float
    unit: str
    regressed: bool

    @property
    def percent(self) -> float:
        return (self.new - self.old) / self.old * 100 if self.old else 0.0

    def line(self) -> str:
        mark = "REGRESSED" if self.regressed else "ok"
        return (
            f"{mark:>9}  {self.what}: {self.old:.3f} -> {self.new:.3f} {self.unit} "
            f"({self.percent:+.1f} %)"
        )


def load(folder: Path) -> Summary:
    path = folder / "summary.json" if folder.is_dir() else folder
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise AnalyzeError(f"--baseline {folder}: no summary.json there") from None
    except (OSError, ValueError) as exc:
        raise AnalyzeError(f"--baseline {path}: not a readable summary.json ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise AnalyzeError(f"--baseline {path}: not an nsysgen analyze summary ({SCHEMA})")
    return cast(Summary, data)  # its schema says it is one


# The per-step times compared, and what a change is called.
_COMPARED: tuple[tuple[StepField, str], ...] = (
    ("step_ms", "step time"),
    ("exposed_comm_ms", "exposed comm"),
)


def _figures(summary: Summary) -> dict[str, tuple[float, str, bool]]:
    """name -> (value, unit, higher is better)."""
    out: dict[str, tuple[float, str, bool]] = {}
    pooled: dict[str, list[float]] = {"step_ms": [], "exposed_comm_ms": []}
    # A baseline written before the last step was left out too has only the first.
    edges = {summary.get("first_step_ignored"), summary.get("last_step_ignored")} - {None}
    for rank in summary.get("ranks", []):
        medians = _medians(rank)
        for key, label in _COMPARED:
            median = medians.get(key)
            if median is not None:
                out[f"rank {rank['rank']} median {label}"] = (float(median), "ms", False)
            judged = (s for s in rank["steps"] if s["step"] not in edges or len(rank["steps"]) == 1)
            pooled[key] += [float(value) for s in judged if (value := s.get(key)) is not None]
    for key, label in _COMPARED:
        if pooled[key]:
            out[f"all ranks median {label}"] = (statistics.median(pooled[key]), "ms", False)
    for row in summary.get("nccl_by_size", []):
        if row["busbw_GBps"] is not None:
            name = f"{row['op']} {row['size']} bus bandwidth"
            out[name] = (float(row["busbw_GBps"]), "GB/s", True)
    return out


def _medians(rank: Any) -> dict[str, float | None]:
    """A rank's medians without the window's edges (or, in an older summary, without its first
    step only)."""
    medians = rank.get("medians_without_window_edges") or rank.get("medians_without_first_step")
    return dict(medians or {})


def compare(old: Summary, new: Summary, threshold: float, min_ms: float) -> list[Change]:
    before, after = _figures(old), _figures(new)
    changes = []
    for name in sorted(before.keys() & after.keys()):
        (was, unit, higher_better), (now, _, _) = before[name], after[name]
        if higher_better:
            regressed = now < was * (1 - threshold)
        else:
            regressed = now > was * (1 + threshold) and now - was > min_ms
        changes.append(Change(name, was, now, unit, regressed))
    return changes
