"""Time intervals on one clock, as (start, end) pairs in ns: union, length, intersection and
difference of merged (sorted, disjoint) lists. The per-step figures are sums of these."""

from __future__ import annotations

import bisect

Interval = tuple[int, int]


def union(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    last_end = None
    for start, end in sorted(intervals):
        if last_end is not None and start <= last_end:
            if end > last_end:
                merged[-1] = (merged[-1][0], end)
                last_end = end
        else:
            merged.append((start, end))
            last_end = end
    return merged


def length(merged: list[Interval]) -> int:
    total = 0
    for start, end in merged:
        total += end - start
    return total


def overlap(a: list[Interval], b: list[Interval]) -> int:
    """Length of the intersection of two merged interval lists."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if high > low:
            total += high - low
        if a[i][1] < b[j][1]:
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
            found.append((at, min(start, end)))
        at = max(at, stop)
        if at >= end:
            break
    if at < end:
        found.append((at, end))
    return [(s, e) for s, e in found if e > s]


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
