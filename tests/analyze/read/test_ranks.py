"""Ranks from report names (nsysgen/analyze/read/ranks.py): kept where every report names its own,
numbered in report order where none does, refused where two reports claim one rank."""

from __future__ import annotations

import pytest

from nsysgen.analyze.read.ranks import (
    NO_GATE,
    NO_RANGE,
    RankCollision,
    assign_ranks,
    comparable,
    not_judged_steps,
    unjudged,
)
from nsysgen.analyze.read.steps import RankTables, StepRow


def tables(report: str, rank: int | None, pid: int = 1) -> RankTables:
    return RankTables(report=report, pid=pid, rank=rank, device=None)


def test_ranks_from_names_are_kept() -> None:
    ranks = assign_ranks([[tables("t_job1_rank1", 1)], [tables("t_job1_rank0", 0)]])
    assert [(t.report, t.rank) for t in ranks] == [("t_job1_rank0", 0), ("t_job1_rank1", 1)]


def test_reports_without_ranks_are_numbered_in_report_order() -> None:
    ranks = assign_ranks([[tables("b", None)], [tables("a", None)]])
    assert [(t.report, t.rank) for t in ranks] == [("a", 0), ("b", 1)]


def test_two_reports_of_one_rank_are_refused_by_name() -> None:
    """A second `..._rank1_...` report copied in: renumbering would hide one of the two."""
    with pytest.raises(RankCollision, match=r"rank 1 is in 2 reports \(a_rank1, b_rank1\)"):
        assign_ranks([[tables("a_rank0", 0)], [tables("a_rank1", 1)], [tables("b_rank1", 1)]])


def counted(rank: int, kernels: int, nccl: int, steps: int) -> RankTables:
    t = tables(f"r_rank{rank}", rank)
    t.kernels_total, t.nccl_kernels_total = kernels, nccl
    t.steps = [
        StepRow(n, "gpu", 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1, 1.0) for n in range(steps)
    ]
    return t


def test_a_rank_short_of_what_the_others_hold_is_not_judged() -> None:
    ranks = [counted(0, 10, 4, 3), counted(1, 0, 0, 3), counted(2, 10, 0, 3), counted(3, 9, 4, 0)]
    assert unjudged(ranks) == {
        1: "its report holds no CUDA kernels",
        2: "its report holds no NCCL kernels, the others' do",
        3: "its report holds no step ranges, the others' do",
    }
    # A table no rank holds (a CPU run's kernels, a run without NCCL) judges nobody out.
    assert unjudged([counted(0, 0, 0, 3), counted(1, 0, 0, 3)]) == {}


def test_only_ranks_with_kernels_where_others_have_them_are_compared() -> None:
    ranks = [counted(0, 10, 4, 3), counted(1, 0, 0, 3), counted(2, 10, 0, 3)]
    # Rank 1 (no kernels) is left out; rank 2 (no NCCL kernels) is named but still compared.
    assert [t.rank for t in comparable(ranks)] == [0, 2]
    cpu_only = [counted(0, 0, 0, 3), counted(1, 0, 0, 3)]  # a CPU run: everyone alike
    assert [t.rank for t in comparable(cpu_only)] == [0, 1]


def test_a_hole_in_a_ranks_steps_is_named() -> None:
    """Steps missing between a rank's first and last: a range lost, and the step after it, which
    no gate opens (the window's edges are not holes: a rank that recorded fewer steps at either
    end has none)."""
    found = not_judged_steps([stepped(0, [8, 9, 10, 12, 13, 15]), stepped(1, [9, 10, 11])])
    assert found == {
        11: {0: NO_RANGE},
        12: {0: NO_GATE},
        14: {0: NO_RANGE},
        15: {0: NO_GATE},
    }
    assert not_judged_steps([stepped(0, [8]), stepped(1, [])]) == {}


def stepped(rank: int, numbers: list[int]) -> RankTables:
    found = tables(f"r{rank}", rank)
    found.steps = [
        StepRow(n, "gpu", 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1, 1.0) for n in numbers
    ]
    return found
