"""`nsysgen analyze --baseline OLD_OUT`: compare with an earlier summary.json, fail on regressions.

Compared: the job's median step time (per step, the slowest rank's step: the job waits for it;
median over the judged steps), each rank's median step time and median exposed communication
(the window's edges left out, as in the summary), and NCCL bus bandwidth per (operation,
message size). A time regresses when it grows by more than `threshold` (a fraction) AND by more
than `min_ms` (so that a 20 us exposed-comm figure going to 30 us is not +50 % of nothing); a
bandwidth regresses when it drops by more than `threshold`.

A rank's time that grew mostly by waiting for a peer (its median wait_ms, the time it lost
waiting, grew by at least half the growth) is not that rank's regression: the change
says "waited for rank N" (the new run's late rank) and does not fail the gate. The verdict is
about the job's step time and names its cause: the new run's verdict sentence
(nsysgen/analyze/judge/verdict.py).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.judge.summary_types import SCHEMA, StepField, Summary


@dataclass(frozen=True)
class Change:
    what: str
    old: float
    new: float
    unit: str
    regressed: bool
    note: str = ""  # why a grown figure is not a regression ("waited for rank 1 ...")
    cause: str = ""  # a regressed rank's step: the part of its own work that grew most

    @property
    def percent(self) -> float:
        return (self.new - self.old) / self.old * 100 if self.old else 0.0

    def line(self) -> str:
        mark = "REGRESSED" if self.regressed else "waited" if self.note else "ok"
        note = f": {self.note or self.cause}" if self.note or self.cause else ""
        return (
            f"{mark:>9}  {self.what}: {self.old:.3f} -> {self.new:.3f} {self.unit} "
            f"({self.percent:+.1f} %){note}"
        )

    def entry(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "old": round(self.old, 4),
            "new": round(self.new, 4),
            "unit": self.unit,
            "percent": round(self.percent, 2),
            "regressed": self.regressed,
            "note": self.note or None,
            "cause": self.cause or None,
        }


# What reading or comparing a baseline of nsysgen's schema raises when its fields hold other
# types (OverflowError: a JSON number beyond a float, or int() of an infinite one).
WRONG_TYPES = (AttributeError, KeyError, TypeError, ValueError, OverflowError)


def load(folder: Path) -> Summary:
    path = folder / "summary.json" if folder.is_dir() else folder
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise AnalyzeError(f"--baseline {folder}: no summary.json there") from None
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise AnalyzeError(f"--baseline {path}: not a readable summary.json ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise AnalyzeError(f"--baseline {path}: not an nsysgen analyze summary ({SCHEMA})")
    try:
        return Summary.from_json(data)  # its schema says it is one
    except WRONG_TYPES as error:
        raise AnalyzeError(wrong_types(folder, error)) from None


def wrong_types(baseline: Path, error: Exception) -> str:
    """The error for a baseline of nsysgen's schema with fields of other types (edited, or
    another tool's)."""
    return (
        f"--baseline {baseline}: its summary.json has fields of the wrong type "
        f"({type(error).__name__}: {error}); pass the folder of an nsysgen analyze run"
    )


# The per-step times compared, and what a change is called.
_COMPARED: tuple[tuple[StepField, str], ...] = (
    ("step_ms", "step time"),
    ("exposed_comm_ms", "exposed comm"),
)


JOB_STEP = "job median step time"


def _judged(summary: Summary, rank: Any) -> list[Any]:
    # A baseline written before the last step was left out too has only the first.
    steps = rank.get("steps") or []
    return [s for s in steps if summary.judged.keeps(s["step"], alone=len(steps) == 1)]


def job_step(summary: Summary) -> float | None:
    """The job's median step time: its own figure, or (an older summary) from its ranks."""
    given = summary.job_median_step_ms
    if given is not None:
        return float(given)
    per_step: dict[int, float] = {}
    for rank in summary.ranks:
        for s in _judged(summary, rank):
            if s.get("step_ms") is not None:
                per_step[s["step"]] = max(per_step.get(s["step"], 0.0), float(s["step_ms"]))
    return statistics.median(per_step.values()) if per_step else None


def _figures(summary: Summary) -> dict[str, tuple[float, str, bool]]:
    """name -> (value, unit, higher is better)."""
    out: dict[str, tuple[float, str, bool]] = {}
    job = job_step(summary)
    if job is not None:
        out[JOB_STEP] = (job, "ms", False)
    for rank in summary.ranks:
        medians = _medians(rank)
        for key, label in _COMPARED:
            median = medians.get(key)
            if median is not None:
                out[f"rank {rank['rank']} median {label}"] = (float(median), "ms", False)
    for row in summary.nccl_by_size:
        # The transfer's bus bandwidth (the wait for a late peer taken out) where the summary
        # has it, so that a straggler is not read as a slower fabric; an older summary's
        # wall-time figure otherwise (compare() keeps like with like).
        for value, label in ((row.get("busbw_GBps"), "bus bandwidth"),
                             (row.get("transfer_busbw_GBps"), _TRANSFER)):  # fmt: skip
            if value is not None:
                out[f"{row['op']} {row['size']} {label}"] = (float(value), "GB/s", True)
    return out


_TRANSFER = "transfer bus bandwidth"


def _like_with_like(names: set[str]) -> set[str]:
    """Where both summaries have a size's transfer bus bandwidth, it alone is compared."""
    return {
        n for n in names if not n.endswith(" bus bandwidth") or n.endswith(_TRANSFER)
        or n.removesuffix("bus bandwidth") + _TRANSFER not in names
    }  # fmt: skip


# A rank's own work, as the summary names its parts.
_OWN = (
    ("compute_busy_ms", "compute"),
    ("comm_transfer_ms", "comm transfer"),
    ("host_gap_ms", "host gaps"),
    ("other_ms", "memcpy/memset"),
    ("idle_ms", "GPU idle"),
)


def _cause(old: Any, new: Any) -> str:
    """The part of a rank's own work whose median grew most (both summaries must have it)."""
    before, after = _medians(old), _medians(new)
    grown = [
        (now - was, label)
        for key, label in _OWN
        if (was := before.get(key)) is not None and (now := after.get(key)) is not None
    ]
    if not grown:
        return ""
    growth, label = max(grown)
    return f"its own work grew: {label} +{growth:.1f} ms" if growth > 0 else ""


def _waits(summary: Summary) -> dict[str, float]:
    """ "rank N" -> its median time lost waiting for peers over its judged steps (wait_ms: its
    exposed wait and its compute slowed by waiting, the figure every view shows)."""
    out = {}
    for rank in summary.ranks:
        values = [
            float(v)
            for s in _judged(summary, rank)
            if (v := s.get("wait_ms", s.get("comm_wait_ms"))) is not None
        ]
        if values:
            out[f"rank {rank['rank']}"] = statistics.median(values)
    return out


def _rank(summary: Summary, number: str) -> Any:
    return next((r for r in summary.ranks if str(r["rank"]) == number), {})


def _medians(rank: Any) -> dict[str, float | None]:
    """A rank's medians without the window's edges (or, in an older summary, without its first
    step only)."""
    medians = rank.get("medians_without_window_edges") or rank.get("medians_without_first_step")
    return dict(medians or {})


def compare(old: Summary, new: Summary, threshold: float, min_ms: float) -> list[Change]:
    before, after = _figures(old), _figures(new)
    waits_before, waits_after = _waits(old), _waits(new)
    late = new.verdict["late_rank"]
    changes = []
    common = _like_with_like(before.keys() & after.keys())
    for name in sorted(common, key=lambda n: (n != JOB_STEP, n)):
        (was, unit, higher_better), (now, _, _) = before[name], after[name]
        note = ""
        if higher_better:
            regressed = now < was * (1 - threshold)
        else:
            regressed = now > was * (1 + threshold) and now - was > min_ms
            who = " ".join(name.split()[:2])
            waited = waits_after.get(who, 0.0) - waits_before.get(who, 0.0)
            if regressed and name != JOB_STEP and waited >= (now - was) / 2:
                regressed = False
                peer = f"rank {late}" if late is not None and who != f"rank {late}" else "peers"
                note = f"waited for {peer} (+{waited:.1f} ms a step lost waiting)"
        cause = ""
        if regressed and name.endswith(" median step time") and name != JOB_STEP:
            cause = _cause(*(_rank(s, name.split()[1]) for s in (old, new)))
        changes.append(Change(name, was, now, unit, regressed, note, cause))
    return changes


class Comparison(TypedDict):
    """summary.json's "baseline": the comparison with an earlier analysis."""

    baseline: str
    threshold_percent: float
    regressed: bool
    text: str  # the verdict: the job's step time and its cause
    changes: list[dict[str, Any]]  # Change.entry() of every figure compared


def comparison(
    changes: list[Change], new: Summary, baseline: Path, threshold_percent: float
) -> Comparison:
    regressed = [c for c in changes if c.regressed]
    job = next((c for c in changes if c.what == JOB_STEP), None)
    verdict = new.verdict["text"]
    cause = f": {verdict}" if verdict else ""
    if not changes:
        text = "nothing in common with the baseline to compare"
    elif job is not None and job.regressed:
        text = (
            f"REGRESSED {JOB_STEP}: {job.old:.1f} -> {job.new:.1f} ms ({job.percent:+.1f} %){cause}"
        )
    elif regressed:
        text = (
            f"REGRESSED {len(regressed)} of {len(changes)} figures beyond {threshold_percent:g} %"
        )
        text += f" ({', '.join(c.what for c in regressed[:3])}){cause}"
    else:
        step = f" ({JOB_STEP} {job.percent:+.1f} %)" if job is not None else ""
        text = f"no regression beyond {threshold_percent:g} %{step}"
    return {
        "baseline": str(baseline),
        "threshold_percent": threshold_percent,
        "regressed": bool(regressed),
        "text": text,
        "changes": [c.entry() for c in changes],
    }
