"""The order `nsysgen analyze` prints its lines in (nsysgen/analyze/render/console.py): which lines
are notes, where lines of no known kind go, and that lines of one kind keep the order they came
in."""

from __future__ import annotations

import pytest

from nsysgen.analyze.render import console


@pytest.mark.parametrize(
    ("line", "note"),
    [
        ("no NCCL kernels in 2 report(s): nothing to plot", True),
        ("not drawn: rank_breakdown.png: no step ranges", True),
        ("limit: bus bandwidth not computed: one rank known", True),
        ("warning: nothing in common with the baseline to compare", True),
        ("no step NVTX ranges ('step N') in the reports: no per-step figures", True),
        ("verdict: no rank late", False),
        ("wrote out/summary.json", False),
        ("  not drawn: indented, so not a note", False),
    ],
)
def test_what_is_a_note(line: str, note: bool) -> None:
    assert console.is_note(line) is note


def test_lines_of_no_known_kind_go_between_the_findings_and_the_notes() -> None:
    lines = [
        "wrote out/b.csv",
        "limit: one rank known",
        "ncclAllReduce  1 KiB  20 calls",
        "report: out/report.html",
        "wrote out/a.csv",
        "not drawn: x.png: no step ranges",
        "stragglers: none above the threshold",
        "flagged: ncclAllReduce 64 KiB: far below the fabric",
        "verdict: no rank late on the 6 judged steps of 2 ranks",
    ]
    assert console.order(lines) == [
        "verdict: no rank late on the 6 judged steps of 2 ranks",
        "stragglers: none above the threshold",
        "ncclAllReduce  1 KiB  20 calls",
        "flagged: ncclAllReduce 64 KiB: far below the fabric",
        "limit: one rank known",
        "not drawn: x.png: no step ranges",
        "wrote out/b.csv",  # files keep the order they were written in
        "report: out/report.html",
        "wrote out/a.csv",
    ]


def test_indented_findings_rank_as_their_kind_but_indented_files_do_not() -> None:
    """The baseline's changes are printed right-aligned ("   waited  rank 0 ..."): indented,
    still a finding; a file line is one only at the start of the line."""
    lines = ["  wrote nothing", "   waited  rank 0 median step time", "regression: REGRESSED"]
    assert console.order(lines) == [
        "regression: REGRESSED",
        "   waited  rank 0 median step time",
        "  wrote nothing",
    ]
    assert console.order([]) == []
