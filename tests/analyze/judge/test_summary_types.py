"""The summary as one typed value (nsysgen/analyze/judge/summary_types.py): its file form holds
the keys in summary.json's order, a file read back is the same summary (its judged window the
one the analysis decided), and a file of an older nsysgen reads with what it lacks left empty."""

from __future__ import annotations

import json

from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.judge.summary_types import SCHEMA, Summary
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import read_export
from tests.conftest import REPO

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"


def slow_job() -> Summary:
    """The H200 run of two ranks, rank 1 slowed (tests/data/gpu/steps17)."""
    reduced = [read_export(p) for p in sorted(STEPS17.glob("s17-slow_*.sqlite"))]
    ranks = assign_ranks([r.tables for r in reduced])
    lateness = measure(ranks)
    return build(ranks, lateness, find(ranks, lateness, Thresholds()), [], Thresholds(), 2,
                 [r.name for r in reduced], label="job s17-slow, run 2")  # fmt: skip


def test_the_file_form_and_a_file_read_back() -> None:
    summary = slow_job()
    data = json.loads(json.dumps(summary.as_json()))
    assert list(data) == [
        "schema", "reports", "world_size", "first_step_ignored", "last_step_ignored",
        "window_edges", "thresholds", "collectives_matched", "collectives_matched_by",
        "steps_with_unequal_collective_counts", "ranks", "stragglers", "nccl_by_size", "limits",
        "by_step", "job_median_step_ms", "verdict", "fabric", "label",
    ]  # fmt: skip
    assert data["schema"] == SCHEMA
    assert data["window_edges"] == {
        "open": summary.first_step_ignored, "close": summary.last_step_ignored,
        "in_stragglers": False, "in_medians": False,
    }  # fmt: skip
    again = Summary.from_json(data)
    assert again == summary  # the judged window too: read back as the analysis decided it
    assert summary.judged.judged and summary.judged.edges == {8, 15}
    assert again.as_json() == data


def test_an_older_file_reads_with_what_it_lacks_empty() -> None:
    older = Summary.from_json({"schema": SCHEMA, "first_step_ignored": 3, "ranks": []})
    assert (older.judged.edges, older.judged.judged) == (frozenset({3}), ())
    assert (older.by_step, older.limits, older.label, older.fabric) == ([], [], "", None)
    assert older.verdict["text"] == "" and older.verdict["late_rank"] is None
    # A verdict of fewer keys keeps them, the rest empty.
    said = Summary.from_json({"verdict": {"text": "rank 1 late", "late_rank": 1}}).verdict
    assert (said["text"], said["late_rank"], said["not_judged"]) == ("rank 1 late", 1, {})
    # True is no step number, for the summary nor its judged window.
    odd = Summary.from_json({"first_step_ignored": True, "last_step_ignored": False})
    assert (odd.first_step_ignored, odd.judged.first_edge, odd.judged.last_edge) == (None,) * 3
