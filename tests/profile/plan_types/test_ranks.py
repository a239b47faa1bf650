"""RecordedRanks (plan_types/ranks.py): its totals and its counts in words, singular and plural,
as compile and plan print them."""

from __future__ import annotations

from nsysgen.profile.plan_types import RecordedRanks


def test_the_counts_in_words() -> None:
    one = RecordedRanks(1, 1, (1,), 1, "[0]")
    assert one.text() == (
        "1 report x 1 rank = 1 rank: 1 per node on 1 node; capture.ranks=[0] names 1"
    )
    many = RecordedRanks(1000, 1, (1,) * 1000, 3000, "all")
    assert many.extra == 0  # never below zero
    assert many.text().startswith("1,000 reports x 1 rank = 1,000 ranks: 1 per node on 1,000 nodes")
    assert RecordedRanks(0, 1, (), 1, "[0]").text().startswith("0 reports x 1 rank = 0 ranks: 0 ")
