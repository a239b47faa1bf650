"""What the report and the pictures show of summary.json, at any rank count: where each rank's
step went, lateness per step as distributions over ranks, the top late ranks, the ranks that
waited, and ranks grouped by node. Shared by the HTML report (html_*.py) and the PNGs
(steps_plot.py), so that both say the same thing.

The summary is the typed value (nsysgen/analyze/judge/summary_types.py); a rank's step rows grew
over time (issue 39), and a view falls back to what a row has rather than failing.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nsysgen.analyze.judge.naming import GPUS_PER_NODE, _named_node, node_of
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.ranks import NO_KERNELS

# From this many ranks on, no view draws one bar or one row per rank: distributions over ranks,
# the top ranks and groups by node instead (a chart of 512 bars is a grey band).
SCALE_RANKS = 64
TOP = 10  # ranks listed in a "top late" or "waited most" view

# Where a rank's step went, in the order drawn (bottom to top), with the summary's keys for
# each part, the first one present taken. Waiting for a late peer is not idle time: it has its
# own part, and the parts it is carved from (communication, idle) are shown without it.
PARTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("compute", "compute", "#4c72b0", ("compute_busy_ms",)),
    ("transfer", "comm transfer", "#c44e52", ("comm_transfer_ms",)),
    ("wait", "waiting for peers", "#dd8452", ("comm_wait_ms",)),
    ("host", "host gaps", "#8172b3", ("host_gap_ms", "host_gaps_ms")),
    ("other", "memcpy/memset only", "#8c8c8c", ("other_ms",)),
    ("idle", "GPU idle", "#d9d9d9", ("idle_ms",)),
)
PART_LABELS = {key: label for key, label, _, _ in PARTS}
PART_COLOURS = {key: colour for key, _, colour, _ in PARTS}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _first(entry: Mapping[str, Any], keys: Iterable[str]) -> float | None:
    for key in keys:
        value = _number(entry.get(key))
        if value is not None:
            return value
    return None


def step_parts(entry: Mapping[str, Any]) -> dict[str, float]:
    """One step's time by part (ms). Where the summary does not split communication into
    waiting and transfer, the wait the lateness analysis measured (wait_ms) stands in for the
    waiting, taken out of the exposed communication and then out of idle time, where a rank
    that waits on a CPU collective shows it."""
    parts = {key: _first(entry, keys) for key, _, _, keys in PARTS}
    if parts["transfer"] is None and parts["wait"] is None:
        wait = max(0.0, _number(entry.get("wait_ms")) or 0.0)
        exposed = max(0.0, _number(entry.get("exposed_comm_ms")) or 0.0)
        idle = max(0.0, parts["idle"] or 0.0)
        from_comm = min(wait, exposed)
        from_idle = min(wait - from_comm, idle)
        parts["transfer"] = exposed - from_comm
        parts["wait"] = from_comm + from_idle
        parts["idle"] = idle - from_idle
    return {key: max(0.0, value or 0.0) for key, value in parts.items()}


def judged(rank: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A rank's steps inside the window (its edges left out, as the medians and stragglers do);
    every step if that leaves none."""
    steps: list[Mapping[str, Any]] = list(rank.get("steps") or [])
    inside = [s for s in steps if not s.get("window_edge")]
    return inside or steps


def rank_parts(rank: Mapping[str, Any]) -> dict[str, float]:
    """A rank's mean step by part, over its judged steps: means, so that the parts add up to
    the rank's mean step (medians part by part add up to no step at all)."""
    rows = [step_parts(s) for s in judged(rank)]
    if not rows:
        return {key: 0.0 for key, _, _, _ in PARTS}
    return {key: statistics.fmean(r[key] for r in rows) for key, _, _, _ in PARTS}


def stepped(summary: Summary) -> list[Mapping[str, Any]]:
    """The ranks with steps that the verdict judged: a rank left out of the judgement (its
    step times not comparable with the others', nsysgen/analyze/read/ranks.py) is drawn in no
    picture either (one figure per fact; the verdict names it)."""
    named = summary.verdict["not_judged"]
    left_out = {rank for rank, why in named.items() if why == NO_KERNELS}
    ranks: list[Mapping[str, Any]] = list(summary.ranks)
    return [r for r in ranks if r.get("steps") and str(r["rank"]) not in left_out]


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (a value some rank really had, not an interpolation)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True)
class Spread:
    """One figure per step over ranks: its median, p90 and max, and the rank with the max."""

    step: int
    median: float
    p90: float
    max: float
    max_rank: int
    edge: bool


def per_step(summary: Summary, field: str) -> list[Spread]:
    values: dict[int, list[tuple[float, int]]] = defaultdict(list)
    edges: set[int] = set()
    for rank in stepped(summary):
        for s in rank["steps"]:
            value = _number(s.get(field))
            if value is not None:
                values[int(s["step"])].append((value, int(rank["rank"])))
            if s.get("window_edge"):
                edges.add(int(s["step"]))
    out = []
    for step, pairs in sorted(values.items()):
        numbers = [v for v, _ in pairs]
        top, who = max(pairs, key=lambda p: (p[0], -p[1]))
        middle, p90 = statistics.median(numbers), quantile(numbers, 0.9)
        out.append(Spread(step, middle, p90, top, who, step in edges))
    return out


@dataclass(frozen=True)
class RankLateness:
    rank: int
    late_ms: float  # over its judged steps
    wait_ms: float
    late_steps: list[int]  # judged steps it was late on (the stragglers' steps, if it is one)
    node: str


# nsysgen's wrapper names a report ..._rankR_nodeN (bench/synth_export.py names them alike).
def per_node(summary: Summary) -> int:
    """GPUs per node: the fabric's (the cluster config's), else GPUS_PER_NODE."""
    count = summary.fabric["gpus_per_node"] if summary.fabric else None
    return count if isinstance(count, int) and count > 0 else GPUS_PER_NODE


def nodes_named(summary: Summary) -> bool:
    return any(_named_node(r) is not None for r in summary.ranks)


def lateness_by_rank(summary: Summary) -> list[RankLateness]:
    """Every stepped rank's lateness and wait over its judged steps, latest first."""
    straggler_steps = {
        int(s["rank"]): [int(x) for x in s.get("steps", [])] for s in summary.stragglers
    }
    out = []
    gpus = per_node(summary)
    for rank in stepped(summary):
        steps = judged(rank)
        late = sum(_number(s.get("late_ms")) or 0.0 for s in steps)
        wait = sum(_number(s.get("wait_ms")) or 0.0 for s in steps)
        number = int(rank["rank"])
        node = node_of(rank, gpus)
        out.append(RankLateness(number, late, wait, straggler_steps.get(number, []), node))
    return sorted(out, key=lambda r: (-r.late_ms, r.rank))


@dataclass(frozen=True)
class NodeLateness:
    node: str
    ranks: int
    late_ms: float
    wait_ms: float
    latest_rank: int
    first_rank: int  # orders nodes of equal lateness as the job numbers them


def by_node(summary: Summary) -> list[NodeLateness]:
    groups: dict[str, list[RankLateness]] = defaultdict(list)
    for r in lateness_by_rank(summary):
        groups[r.node].append(r)
    out = [
        NodeLateness(
            node,
            len(members),
            sum(m.late_ms for m in members),
            sum(m.wait_ms for m in members),
            max(members, key=lambda m: (m.late_ms, -m.rank)).rank,
            min(m.rank for m in members),
        )
        for node, members in groups.items()
    ]
    return sorted(out, key=lambda n: (-n.late_ms, n.first_rank))


def judged_steps(summary: Summary) -> list[int]:
    """The steps the verdict judged (by_step's flag: the window's edges and the steps a rank
    cannot be judged on left out); without any, the steps inside the window."""
    recorded = (int(s["step"]) for r in stepped(summary) for s in r["steps"])
    return summary.judged.steps(recorded)


def waited_for(summary: Summary, late_rank: int, steps: list[int]) -> list[int]:
    """The ranks that waited (wait_ms > 0) on the late rank's steps, by how long."""
    wanted = set(steps)
    totals: dict[int, float] = defaultdict(float)
    for rank in stepped(summary):
        number = int(rank["rank"])
        if number == late_rank:
            continue
        for s in rank["steps"]:
            wait = _number(s.get("wait_ms")) or 0.0
            if int(s["step"]) in wanted and wait > 0:
                totals[number] += wait
    return [r for r, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))]
