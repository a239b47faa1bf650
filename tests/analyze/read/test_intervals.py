"""Interval arithmetic of the per-step figures (nsysgen/analyze/read/intervals.py): union, length,
overlap, gaps, minus and head_overlap, on hand-made cases and against a count of covered
nanoseconds on random intervals."""

from __future__ import annotations

import random

from nsysgen.analyze.read import intervals as iv
from nsysgen.analyze.read.intervals import Interval


def covered(intervals: list[Interval]) -> set[int]:
    """Every nanosecond [start, end) covers: the slow, obvious answer."""
    return {t for start, end in intervals for t in range(start, end)}


def test_union_merges_overlapping_touching_and_nested_intervals() -> None:
    assert iv.union([(5, 8), (0, 2), (2, 3), (6, 7), (10, 10), (9, 12)]) == [
        (0, 3), (5, 8), (9, 12)
    ]  # fmt: skip
    assert iv.union([]) == []
    assert iv.length(iv.union([(0, 10), (5, 15)])) == 15


def test_overlap_gaps_and_minus_on_cases() -> None:
    merged = [(0, 3), (5, 8), (9, 12)]
    assert iv.overlap(merged, [(2, 6), (7, 10)]) == 1 + 1 + 1 + 1
    assert iv.overlap(merged, []) == 0
    # The parts of [begin, end) nothing covers, begin and end inside intervals or not.
    assert iv.gaps(merged, -2, 14) == [(-2, 0), (3, 5), (8, 9), (12, 14)]
    assert iv.gaps(merged, 1, 6) == [(3, 5)]
    assert iv.gaps(merged, 6, 7) == []
    assert iv.gaps([], 4, 9) == [(4, 9)]
    starts = [s for s, _ in merged]
    assert iv.minus((1, 10), merged, starts) == [(3, 5), (8, 9)]
    assert iv.minus((12, 20), merged, starts) == [(12, 20)]
    assert iv.minus((6, 7), merged, starts) == []


def test_head_overlap_counts_the_pieces_inside_the_head() -> None:
    # Pieces (offsets from a kernel's start) [0, 2) and [5, 9): a head of 6 holds 2 + 1.
    assert iv.head_overlap([0, 2, 5, 9], 6) == 3
    assert iv.head_overlap([0, 2, 5, 9], 0) == 0
    assert iv.head_overlap([0, 2, 5, 9], 100) == 6
    assert iv.head_overlap([3], 10) == 0  # an unpaired offset is no piece


def test_every_operation_agrees_with_counting_nanoseconds() -> None:
    rng = random.Random(41)
    for _ in range(200):
        a = [(s, s + rng.randint(0, 6)) for s in (rng.randint(0, 40) for _ in range(6))]
        b = [(s, s + rng.randint(0, 6)) for s in (rng.randint(0, 40) for _ in range(6))]
        ma, mb = iv.union(a), iv.union(b)
        assert covered(ma) == covered(a)
        assert all(x[1] < y[0] for x, y in zip(ma, ma[1:], strict=False))  # sorted, disjoint
        assert iv.length(ma) == len(covered(a))
        assert iv.overlap(ma, mb) == len(covered(a) & covered(b))
        begin, end = sorted((rng.randint(-3, 48), rng.randint(-3, 48)))
        window = set(range(begin, end))
        assert covered(iv.gaps(ma, begin, end)) == window - covered(a)
        found = iv.minus((begin, end), ma, [s for s, _ in ma])
        assert covered(found) == window - covered(a)
        assert all(e > s for s, e in found)
