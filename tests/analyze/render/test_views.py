"""What the report and the pictures show of summary.json (nsysgen/analyze/render/views.py), on small
summaries written here: the judged steps and a rank's mean step by part, the spread per step
over ranks, nodes as the summary or the report names say (else blocks of the fabric's GPUs per
node), lateness by rank and by node, who waited, and ranks and steps in words."""

from __future__ import annotations

from typing import Any

from nsysgen.analyze.judge import naming
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import views

S = Summary.from_json  # a summary as its file holds it


def step(n: int, late: float = 0.0, wait: float = 0.0, edge: str | None = None) -> dict[str, Any]:
    return {"step": n, "late_ms": late, "wait_ms": wait, "window_edge": edge,
            "compute_busy_ms": 10.0 + n, "comm_wait_ms": wait, "comm_transfer_ms": 1.0}  # fmt: skip


def job() -> dict[str, Any]:
    """Four ranks, steps 0..3 (0 and 3 the window's edges): rank 2 late on step 1 and 2 (the
    others waiting for it), rank 0 late on the closing edge only."""
    ranks = []
    for r in range(4):
        rows = [
            step(0, wait=1.0, edge="open"),
            step(1, late=6.0 if r == 2 else 0.0, wait=0.0 if r == 2 else 6.0 - r),
            step(2, late=4.0 if r == 2 else 0.0, wait=0.0 if r == 2 else 4.0),
            step(3, late=50.0 if r == 0 else 0.0, edge="close"),
        ]
        ranks.append({"rank": r, "report": f"job_rank{r}_node{r // 2}", "steps": rows})
    ranks.append({"rank": 9, "report": "job_rank9", "steps": []})  # no steps: not shown
    return {"ranks": ranks, "first_step_ignored": 0, "last_step_ignored": 3,
            "stragglers": [{"rank": 2, "steps": [1, 2]}]}  # fmt: skip


def test_a_ranks_mean_step_over_its_judged_steps() -> None:
    rank = job()["ranks"][1]
    assert [s["step"] for s in views.judged(rank)] == [1, 2]
    parts = views.rank_parts(rank)
    assert (parts["compute"], parts["wait"], parts["transfer"]) == (11.5, 4.5, 1.0)
    only_edges = {"steps": [step(0, edge="open"), step(5, edge="close")]}
    assert len(views.judged(only_edges)) == 2  # nothing inside: every step
    assert set(views.rank_parts({"steps": []}).values()) == {0.0}


def test_spread_per_step_over_ranks() -> None:
    assert views.quantile([5.0, 1.0, 3.0, 2.0, 4.0], 0.9) == 5.0  # a value some rank had
    assert views.quantile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    spreads = {s.step: s for s in views.per_step(S(job()), "wait_ms")}
    assert sorted(spreads) == [0, 1, 2, 3]
    one = spreads[1]
    assert (one.median, one.p90, one.max, one.max_rank, one.edge) == (4.0, 6.0, 6.0, 0, False)
    # A tie for the max names the lowest rank; the edges are marked.
    assert (spreads[2].max_rank, spreads[0].edge, spreads[3].edge) == (0, True, True)


def test_nodes_from_the_summary_the_report_name_or_blocks_of_ranks() -> None:
    assert views.per_node(S({"fabric": {"gpus_per_node": 4}})) == 4
    assert views.per_node(S({"fabric": None})) == views.per_node(S({})) == naming.GPUS_PER_NODE
    assert views.nodes_named(S(job())) and not views.nodes_named(S({"ranks": [{"report": "a"}]}))


def test_lateness_by_rank_and_by_node_over_judged_steps() -> None:
    summary = job()
    by_rank = views.lateness_by_rank(S(summary))
    # Rank 0's 50 ms on the closing edge is not judged: it ranks with the ranks never late.
    assert [(r.rank, r.late_ms, r.wait_ms, r.late_steps, r.node) for r in by_rank] == [
        (2, 10.0, 0.0, [1, 2], "node 1"),
        (0, 0.0, 10.0, [], "node 0"),
        (1, 0.0, 9.0, [], "node 0"),
        (3, 0.0, 7.0, [], "node 1"),
    ]
    nodes = views.by_node(S(summary))
    found = [(n.node, n.ranks, n.late_ms, n.wait_ms, n.latest_rank, n.first_rank) for n in nodes]
    assert found == [
        ("node 1", 2, 10.0, 7.0, 2, 2),
        ("node 0", 2, 0.0, 19.0, 0, 0),
    ]  # fmt: skip
    assert views.judged_steps(S(summary)) == [1, 2]
    assert views.waited_for(S(summary), 2, [1]) == [0, 1, 3]  # 6, 5 and 3 ms on step 1
    assert views.waited_for(S(summary), 2, [2]) == [0, 1, 3]
    assert views.waited_for(S(summary), 2, [3]) == []
