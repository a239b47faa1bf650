"""How late was the late rank, by four definitions, on the same reports (BENCHMARKS.md, issue 46):

- HTA (HolisticTraceAnalysis's straggler analysis, paraphrased): per step, the rank whose last
  communication kernel starts latest; it names a rank and gives no time;
- TraceLens (its NCCL analyser's straggler summary, paraphrased): per collective, each rank's
  skew is the latest start less its own; summed over the step's collectives, the late rank's
  figure is the sum of the skews between it and the earliest rank;
- the sum (nsysgen's lateness before issue 46): over the step's collectives, how long the
  next-to-last rank's kernel waited for the last one;
- the critical path (nsysgen/analyze/judge/critical.py): the late rank's share of the step's path.

Starts are taken from each rank's opening gate (the end of the previous step's last collective),
so no clock is compared across hosts. Scenarios: bench/synth_ddp.py jobs with planted delays
(and their controls, for the time the step grew), bench/synth_pp.py's pipeline stages, and the
real two-rank H200 exports of tests/data/gpu/steps17. Prints one Markdown table.

    python bench/stragglers_compare.py [WORK_DIR]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import synth_ddp  # noqa: E402  (bench/synth_ddp.py)
import synth_pp  # noqa: E402  (bench/synth_pp.py)

from nsysgen.analyze.judge.stragglers import Thresholds, measure  # noqa: E402
from nsysgen.analyze.read.ranks import assign_ranks  # noqa: E402
from nsysgen.analyze.read.report import read_export  # noqa: E402
from nsysgen.analyze.read.steps import RankTables, window_edges  # noqa: E402

STEPS17 = HERE.parent / "tests" / "data" / "gpu" / "steps17"
JUDGED = range(9, 15)


@dataclass(frozen=True)
class Row:
    scenario: str
    planted: str
    grew_ms: float | None  # the job's median step against the control's
    hta: str
    tracelens: str
    summed: str
    critical: str
    what_if: str


def _starts(ranks: list[RankTables]) -> dict[int, dict[int, list[int]]]:
    """step -> rank -> its collectives' starts from its opening gate (ns), in order."""
    gates = {(t.rank, row.step): row.gate_ns for t in ranks for row in t.steps}
    found: dict[int, dict[int, list[int]]] = defaultdict(dict)
    for t in ranks:
        per: dict[int, list[int]] = defaultdict(list)
        for c in sorted(t.collectives, key=lambda c: (c.step, c.index)):
            gate = gates.get((t.rank, c.step))
            if gate is not None and c.start_ns is not None:
                per[c.step].append(c.start_ns - gate)
        for step, values in per.items():
            assert t.rank is not None
            found[step][t.rank] = values
    return found


def _mode(values: list[int]) -> str:
    if not values:
        return "–"
    top = statistics.mode(values)
    return f"rank {top} ({values.count(top)}/{len(values)} steps)"


def _mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.1f} ms" if values else "–"


def compare(
    scenario: str, planted: str, folder: Path, control: float | None, stages: int | None = None
) -> Row:
    reduced = [read_export(p) for p in sorted(folder.glob("*.sqlite"))]
    ranks = assign_ranks([r.tables for r in reduced])
    lateness = measure(ranks, Thresholds(), stages)
    steps = sorted({row.step for t in ranks for row in t.steps})
    first, last = window_edges(steps)
    judged = [s for s in steps if s not in (first, last)]
    starts = _starts(ranks)
    hta: dict[int, int] = {}
    traced: dict[int, float] = {}
    summed: dict[int, float] = {}
    critical, ranks_late, saved, together, late_steps = [], [], [], [], []
    for step in judged:
        by_rank = starts.get(step, {})
        if len(by_rank) < 2:
            continue
        hta[step] = max(by_rank, key=lambda r: (by_rank[r][-1], -r))
        count = min(len(v) for v in by_rank.values())
        latest = max(by_rank, key=lambda r: (sum(by_rank[r][:count]), -r))
        skew = sum(by_rank[latest][k] - min(v[k] for v in by_rank.values()) for k in range(count))
        traced[step] = skew / 1e6
        summed[step] = max(v for (_, s), v in lateness.summed_late_ms.items() if s == step)
        late = [(v, r) for (r, s), v in lateness.late_ms.items() if s == step and v > 0]
        if late:
            value, rank = max(late)
            critical.append(value)
            ranks_late.append(rank)
            together.append(len(late))
            late_steps.append(step)
            path = lateness.paths.get(step)
            if path is not None:
                saved.append(path.saving_ms)
    # Every definition on the same steps: those found late, else every judged step.
    on = late_steps or [s for s in judged if s in hta]
    # How much the job's step grew: on the steps found late, else the median of all judged.
    job = {s: max(row.step_ms for t in ranks for row in t.steps if row.step == s) for s in judged}
    chosen = [job[s] for s in late_steps] or list(job.values())
    grew = statistics.fmean(chosen) - control if control is not None else None
    who = _mode(ranks_late)
    if together and statistics.median(together) > 1:
        who = f"{statistics.median(together):.0f} ranks together"
    return Row(
        scenario,
        planted,
        grew,
        _mode([hta[s] for s in on]),
        _mean([traced[s] for s in on]),
        _mean([summed[s] for s in on]),
        f"{who}, {_mean(critical)}" if critical else "nobody late",
        _mean(saved),
    )


def synthetic(work: Path) -> list[Row]:
    rows = []
    cases = [
        ("2 ranks, rank 1 sleeps 25 ms before backward", 2,
         {"host_ms": {1: dict.fromkeys(range(8, 16), 25.0)}}, "25 ms"),
        ("2 ranks, rank 0 sleeps 40 ms on steps 11, 14", 2,
         {"host_ms": {0: {11: 40.0, 14: 40.0}}}, "40 ms on 2 steps"),
        ("8 ranks, rank 7's GPU 1.5x slower", 8, {"slow": {7: 1.5}}, "kernels +50 %"),
        ("16 ranks, node 1 (ranks 8-15) 25 ms late", 16,
         {"host_ms": {r: dict.fromkeys(range(8, 16), 25.0) for r in range(8, 16)}}, "25 ms"),
    ]  # fmt: skip
    controls: dict[int, float] = {}
    for name, ranks, plant, planted in cases:
        if ranks not in controls:
            folder = work / f"control{ranks}"
            truth = synth_ddp.job(folder, synth_ddp.Shape(ranks=ranks), synth_ddp.Plant())
            controls[ranks] = statistics.median(truth.step_ms[s] for s in JUDGED)
            rows.append(compare(f"control, {ranks} ranks", "nothing", folder, controls[ranks]))
        folder = work / name.replace(" ", "_").replace(",", "")
        synth_ddp.job(folder, synth_ddp.Shape(ranks=ranks), synth_ddp.Plant(**plant))
        rows.append(compare(name, planted, folder, controls[ranks]))
    return rows


def pipeline(work: Path) -> list[Row]:
    """bench/synth_pp.py's GPipe stages (8 ranks: 2 stages of 4), as `--pipeline-stages 2`."""
    rows = []
    shape = synth_pp.Shape(ranks=8, stages=2)
    folder = work / "pp-control"
    truth = synth_pp.job(folder, shape, synth_ddp.Plant())
    control = statistics.median(truth.step_ms[s] for s in JUDGED)
    rows.append(compare("control, 8 ranks in 2 pipeline stages", "nothing", folder, control, 2))
    cases = [
        ("8 ranks in 2 stages, rank 5 (last stage) sleeps 25 ms", 5),
        ("8 ranks in 2 stages, rank 1 (first stage) sleeps 25 ms", 1),
    ]
    for name, rank in cases:
        folder = work / f"pp-rank{rank}"
        plant = synth_ddp.Plant(host_ms={rank: dict.fromkeys(range(8, 16), 25.0)})
        synth_pp.job(folder, shape, plant)
        rows.append(compare(name, "25 ms", folder, control, 2))
    return rows


def real(work: Path) -> list[Row]:
    rows = []
    for job, planted in (("clean", "nothing"), ("slow", "40 ms every step"),
                         ("hiccup", "40 ms on steps 11, 14")):  # fmt: skip
        folder = work / f"steps17-{job}"
        folder.mkdir()
        for source in sorted(STEPS17.glob(f"s17-{job}_*.sqlite")):
            (folder / source.name).write_bytes(source.read_bytes())
        rows.append(compare(f"real H200, 2 ranks, gloo ({job})", planted, folder, None))
    return rows


def table(rows: list[Row]) -> str:
    head = (
        "| reports | planted | step grew (its late steps) | HTA names | TraceLens's sum of "
        "skews | the sum (before) | critical path (now) | step shorter had it been on time |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        grew = "–" if r.grew_ms is None else f"{r.grew_ms:+.1f} ms"
        lines.append(f"| {r.scenario} | {r.planted} | {grew} | {r.hta} | {r.tracelens} | "
                     f"{r.summed} | {r.critical} | {r.what_if} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    print(table(synthetic(work) + pipeline(work) + real(work)))


if __name__ == "__main__":
    main()
