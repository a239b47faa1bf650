"""Time intervals on one clock, as (start, end) pairs in ns: union, length, intersection and
difference of merged (sorted, disjoint) lists. The per-step figures are sums of these."""

from __future__ import annotations

import bisect
from operator import itemgetter

Interval = tuple[int, int]

# A report holds millions of intervals: the loops below are kept to one comparison per interval
# where they can, and sums run in C (map over itemgetter).
_STARTS, _ENDS = itemgetter(0), itemgetter(1)


def union(intervals: list[Interval]) -> list[Interval]:
    ordered = sorted(intervals)
    if not ordered:
        return []
    merged: list[Interval] = []
    low, high = ordered[0]
    for start, end in ordered:
        if start > high:
            merged.append((low, high))
            low, high = start, end
        elif end > high:
            high = end
    merged.append((low, high))
    return merged


def length(merged: list[Interval]) -> int:
    """The time the intervals cover, when merged; the sum of their durations in any case."""
    total: int = sum(map(_ENDS, merged)) - sum(map(_STARTS, merged))
    return total


def overlap(a: list[Interval], b: list[Interval]) -> int:
    """Length of the intersection of two merged interval lists."""
    total, i, j, count_a, count_b = 0, 0, 0, len(a), len(b)
    while i < count_a and j < count_b:
        (a0, a1), (b0, b1) = a[i], b[j]
        low, high = (a0 if a0 > b0 else b0), (a1 if a1 < b1 else b1)
        if high > low:
            total += high - low
        if a1 < b1:
            i += 1
        else:
            j += 1
    return total


def gaps(merged: list[Interval], begin: int, end: int) -> list[Interval]:
    """The parts of [begin, end) that no interval of `merged` covers."""
    found: list[Interval] = []
    at = begin
    for start, stop in merged:
        if start > at:
            cut = start if start < end else end
            if cut > at:
                found.append((at, cut))
        if stop > at:
            at = stop
            if at >= end:
                break
    if at < end:
        found.append((at, end))
    return found


def minus(span: Interval, merged: list[Interval], starts: list[int]) -> list[Interval]:
    """The parts of `span` outside `merged` (`starts`: its starts, for the binary search)."""
    begin, end = span
    first = max(0, bisect.bisect_right(starts, begin) - 1)
    out: list[Interval] = []
    at = begin
    for start, stop in merged[first:]:
        if start >= end:
            break
        if stop <= at:
            continue
        if start > at:
            out.append((at, start))
        at = max(at, stop)
        if at >= end:
            break
    if at < end:
        out.append((at, end))
    return out


def head_overlap(pieces: list[int], head: int) -> int:
    """How much of [0, head) the pieces (flat [a0, b0, a1, b1, ...], offsets) cover."""
    total = 0
    for i in range(0, len(pieces) - 1, 2):
        low, high = pieces[i], min(pieces[i + 1], head)
        if high > low:
            total += high - low
    return total
