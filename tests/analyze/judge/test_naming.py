"""How the judgement names what it found (nsysgen/analyze/judge/naming.py): ranks and steps in
words, a rank's node from the summary, its report's name or blocks of ranks."""

from __future__ import annotations

import pytest

from nsysgen.analyze.judge import naming


def test_a_ranks_node_from_its_host_its_report_name_or_its_block() -> None:
    assert naming.node_of({"rank": 3, "host": "gpu-a", "report": "x_node7"}) == "gpu-a"
    assert naming.node_of({"rank": 3, "report": "x_rank3_node7.sqlite"}) == "node 7"
    assert naming.node_of({"rank": 11, "report": "x_rank11"}) == "ranks 8-15"
    assert naming.node_of({"rank": 11, "report": "x_nodes4"}, gpus=4) == "ranks 8-11"


@pytest.mark.parametrize(
    ("ranks", "text"),
    [([], "no rank"), ([5], "rank 5"), ([0, 2, 3], "ranks 0, 2 and 3"),
     (list(range(1030)), "ranks 0, 1, 2, 3, 4, 5 and 1,024 more")],
)  # fmt: skip
def test_ranks_in_words(ranks: list[int], text: str) -> None:
    assert naming.ranks_text(ranks) == text
    # Listed only in part (the verdict keeps the first six), counted in full.
    assert naming.ranks_text(ranks[:6], total=len(ranks)) == text
    assert naming.steps_text(list(range(14)), most=3) == "0, 1, 2 and 11 more"
