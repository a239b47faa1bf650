"""Builds the summary of `nsysgen analyze` (nsysgen/analyze/judge/summary_types.py: its fields
and summary.json's keys) from the ranks' tables, the lateness and the NCCL calls.

Medians per rank leave out the window's edges, as the straggler analysis does: the first
recorded step (warm-up, and the pause when the capture opens) and the last one (the pause when
it closes: seconds, nsysgen/profile/pause.py). steps.csv and summary.json mark both."""

from __future__ import annotations

import statistics

from nsysgen.analyze.judge import fabric as yardstick
from nsysgen.analyze.judge import naming, waiting
from nsysgen.analyze.judge import verdict as answer
from nsysgen.analyze.judge.bandwidth import nccl_by_size, not_corrected
from nsysgen.analyze.judge.late_ranks import ALONE, Straggler, path_limits
from nsysgen.analyze.judge.stragglers import Lateness, Thresholds, split
from nsysgen.analyze.judge.summary_types import (
    MEDIAN_FIELDS,
    CudaGraphs,
    RankEntry,
    StepEntry,
    Summary,
)
from nsysgen.analyze.judge.window import JudgedWindow
from nsysgen.analyze.read.landmarks import BY_LAUNCH_ORDER
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.read.ranks import comparable, not_judged_steps, unjudged
from nsysgen.analyze.read.steps import RankTables, StepRow, window_edges


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def all_edges(ranks: list[RankTables]) -> tuple[int | None, int | None]:
    """The window's edges over every rank: the first and last step recorded on any."""
    return window_edges(row.step for t in ranks for row in t.steps)


def own_edges(t: RankTables) -> tuple[int | None, int | None]:
    """A rank's own window edges: ranks on other nodes can start their window a step apart,
    and each pauses at its own first and last recorded step."""
    return window_edges(row.step for row in t.steps)


def _step_entry(
    row: StepRow, rank: int, lateness: Lateness, edges: tuple[int | None, int | None]
) -> StepEntry:
    edge = "open" if row.step == edges[0] else "close" if row.step == edges[1] else None
    comm_wait, comm_transfer = split(row, rank, lateness)
    return {
        "step": row.step,
        "source": row.source,
        "cpu_ms": row.cpu_ms,
        "step_ms": _round(row.step_ms),
        "compute_ms": _round(row.compute_ms),
        "nccl_ms": _round(row.nccl_ms),
        "compute_busy_ms": _round(row.compute_busy_ms),
        "exposed_comm_ms": _round(row.exposed_comm_ms),
        "other_ms": _round(row.other_ms),
        "idle_ms": _round(row.idle_ms),
        "kernels": row.kernels,
        "wait_ms": _round(lateness.wait_ms.get((rank, row.step))),
        "late_ms": _round(lateness.late_ms.get((rank, row.step))),
        "window_edge": edge,
        "gpu_ms": _round(row.gpu_ms),
        "comm_wait_ms": _round(comm_wait),
        "comm_transfer_ms": _round(comm_transfer),
        "host_gap_ms": _round(row.host_gap_ms),
        "waited_for": lateness.waited_for.get((rank, row.step)),
        "graph_launches": row.graph_launches,
    }


def _rank_entry(t: RankTables, lateness: Lateness) -> RankEntry:
    assert t.rank is not None
    own = own_edges(t)
    entries = [_step_entry(row, t.rank, lateness, own) for row in t.steps]
    judged = [e for e in entries if e["window_edge"] is None] or entries
    medians: dict[str, float | None] = {
        name: _median([e[name] for e in judged])  # type: ignore[literal-required]
        for name in [*MEDIAN_FIELDS, "cpu_ms"]
    }
    return {
        "rank": t.rank,
        "report": t.report,
        "pid": t.pid,
        "device": t.device,
        "medians_without_window_edges": medians,
        "totals": {
            "kernel_ms": round(t.kernel_ms_total, 4),
            "kernels": t.kernels_total,
            "nccl_kernel_ms": round(t.nccl_ms_total, 4),
            "nccl_kernels": t.nccl_kernels_total,
            "steps": len(t.steps),
            "graph_ms": round(t.graph_ms_total, 4),
            "graph_launches": t.graph_launches_total,
        },
        "steps": entries,
    }


def cuda_graphs(ranks: list[RankTables]) -> CudaGraphs | None:
    """What the reports say of CUDA graphs; None when no graph launch was recorded."""
    launches = sum(t.graph_launches_total for t in ranks)
    if not launches:
        return None
    if any(t.graphs_traced == "graph" for t in ranks):
        note = (
            "graph launches counted as compute, each as one piece of work: the kernels inside "
            "were not traced (record with --cuda-graph-trace=node to see inside)"
        )
        return {"launches": launches, "traced": "graph", "note": note}
    note = "kernels inside graphs traced (--cuda-graph-trace=node) and read one by one"
    return {"launches": launches, "traced": "node", "note": note}


def _nodes(ranks: list[RankTables]) -> dict[int, str]:
    """Each rank's node, as its report's name says (or its block of GPUS_PER_NODE ranks)."""
    return {
        t.rank: naming.node_of({"rank": t.rank, "report": t.report})
        for t in ranks
        if t.rank is not None and t.steps
    }


def build(
    ranks: list[RankTables],
    lateness: Lateness,
    stragglers: list[Straggler],
    calls: list[NcclCall],
    thresholds: Thresholds,
    world: int,
    reports: list[str],
    world_given: bool = False,
    label: str = "",
    reference: tuple[tuple[int, float, float | None], ...] = (),
    fabric: yardstick.Fabric | None = None,
    absent: dict[int, str] | None = None,
) -> Summary:
    edges = all_edges(ranks)
    judged_ranks = comparable(ranks)  # the ranks the verdict is about
    holes = _holes(judged_ranks, lateness)
    steps = waiting.by_step(ranks, lateness, thresholds, set(holes))
    stepped = sum(1 for t in ranks if t.steps)
    judged = sum(1 for t in judged_ranks if t.steps)
    sizes = nccl_by_size(calls, world, fabric, lateness.call_wait_ns)
    summary = Summary(
        reports=reports,
        world_size=world,
        first_step_ignored=edges[0],
        last_step_ignored=edges[1],
        thresholds=thresholds.as_dict(),
        collectives_matched=lateness.matched,
        collectives_matched_by=sorted(lateness.matched_by),
        steps_with_unequal_collective_counts=lateness.mismatched_steps,
        ranks=[_rank_entry(t, lateness) for t in ranks],
        stragglers=stragglers,
        nccl_by_size=sizes,
        limits=limits(calls, len(ranks), world, world_given),
        by_step=steps,
        job_median_step_ms=waiting.job_step_median(steps),
        verdict=answer.build(
            stragglers,
            steps,
            lateness,
            judged,
            thresholds,
            _nodes(ranks),
            {**unjudged(ranks), **(absent or {})},
            holes,
        ),
        fabric=fabric,
        judged=JudgedWindow(edges[0], edges[1], tuple(s["step"] for s in steps if s["judged"])),
        label=label,
        nccl_tests=list(reference),
    )
    # With one rank known there is no bus bandwidth to correct (a limit says so already).
    uncorrected = not_corrected(sizes) if world > 1 else None
    if uncorrected is not None:
        summary.limits.append(uncorrected)
    if sizes and fabric is None:
        summary.limits.append(yardstick.NO_FABRIC)
    elif sizes and fabric is not None:
        summary.limits.append(f"fabric: {yardstick.describe(fabric, world)}")
    if stepped > 1:
        summary.limits += limits_of_readiness(ranks)
    if stepped == 1 and any(t.collectives for t in ranks):
        summary.limits.append(
            "waiting not told from transfer: one rank recorded, so its collectives have no "
            "peer to compare with (all of their time counts as comm_transfer_ms)"
        )
    summary.limits += path_limits(lateness)
    summary.cuda_graphs = cuda_graphs(ranks)
    if summary.cuda_graphs is not None and summary.cuda_graphs["traced"] == "graph":
        summary.limits.append(f"CUDA graphs: {summary.cuda_graphs['note']}")
    return summary


def _holes(ranks: list[RankTables], lateness: Lateness) -> dict[int, dict[int, str]]:
    """step -> rank -> why it is not judged there: a hole in its step ranges, or no peer in
    its pipeline stage."""
    holes = not_judged_steps(ranks)
    for step, alone in lateness.peerless.items():
        for rank in alone:
            holes.setdefault(step, {})[rank] = ALONE
    return holes


def limits(calls: list[NcclCall], ranks: int, world: int, world_given: bool) -> list[str]:
    """What cannot be computed from these reports, or holds only under an assumption."""
    found = []
    unsized = sum(1 for call in calls if not call.size_bytes)
    if unsized:
        found.append(
            f"bandwidth of {unsized} of {len(calls)} NCCL call(s) not computed: their message "
            "size is unknown (no NCCL payload in the export, nor a sized NVTX range around "
            "them)"
        )
    if calls and world < 2:
        found.append(
            "bus bandwidth not computed: one rank known (pass --world-size, the job's rank "
            "count); algbw_GBps is per call"
        )
    elif calls and not world_given:
        found.append(
            f"bus bandwidth assumes the job had {world} ranks, the ones recorded (pass "
            "--world-size if it had more)"
        )
    if world_given and 0 < ranks < world:
        found.append(
            f"{ranks} of {world} ranks recorded: stragglers and per-step figures are among "
            "those only (a rank not recorded can be late unseen)"
        )
    return found


def limits_of_readiness(ranks: list[RankTables]) -> list[str]:
    """Where a rank's readiness for its NCCL kernels came from launch order, and why."""
    lost = sorted({t.ready_lost for t in ranks if t.nccl_kernels_total and t.ready_lost})
    return [f"{BY_LAUNCH_ORDER} ({'; '.join(lost)})"] if lost else []
