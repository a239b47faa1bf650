"""The report's NCCL, not-judged and baseline sections (nsysgen/analyze/render/html_evidence.py):
sizes ordered and held against the fabric (the share of expected computed where summary.json has
none, a flag of True written FLAGGED, an older summary's whole-kernel bandwidth where no transfer
figure), what was not judged gathered from every key that says so, and the baseline's changes
ordered regressed, waited, rest, at most 40."""

from __future__ import annotations

import re
from typing import Any

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import html_evidence as he
from nsysgen.analyze.render.html_verdict import Regression

S = Summary.from_json  # a summary as its file holds it

P5 = {"source": "--cluster p5", "gpus_per_node": 8, "nodes": 2, "nvlink_GBps": 450,
      "efa_Gbps": None}  # fmt: skip


def size(n: int, **figures: Any) -> dict[str, Any]:
    return {"op": "ncclAllReduce", "size_bytes": n, "size": f"{n} B", "calls": 4,
            "median_us": 10.0, **figures}  # fmt: skip


def cells(page: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>([^<]*)</td>", row)
            for row in re.findall(r"<tr><td.*?</tr>", page)]  # fmt: skip


def test_sizes_held_against_the_fabric() -> None:
    rows = [
        size(2048, transfer_median_us=8.0, transfer_busbw_GBps=50.0, expected_busbw_GBps=100.0,
             flag=True),
        size(1024, transfer_median_us=9.0, transfer_busbw_GBps=None, fraction_of_expected=0.25),
    ]  # fmt: skip
    page = he.nccl(S({"nccl_by_size": rows, "fabric": P5, "world_size": 16}))
    assert (
        "<p>Fabric from --cluster p5: 8 GPUs per node, 2 node(s), NVLink 450 GB/s per GPU, EFA "
        "unknown; 16 rank(s): within one node NVLink&#x27;s rate is expected, across nodes the "
        "node&#x27;s EFA rate.</p>"
    ) in page
    assert "Bandwidth is from transfer time" in page
    assert cells(page) == [
        ["1024 B", "4", "10.000", "9.000", "–", "–", "25 %", ""],
        ["2048 B", "4", "10.000", "8.000", "50.000", "100.000", "50 %", "FLAGGED"],
    ]
    assert "bus bandwidth (median call&#x27;s transfer)" in page
    assert "expected from the fabric" in page


def test_an_older_summary_without_transfer_or_fabric_figures() -> None:
    rows = [
        size(1024, busbw_GBps=None, algbw_GBps=3.0),
        size(4096, busbw_GBps=None, algbw_GBps=6.0, flag=False),
    ]
    page = he.nccl(S({"nccl_by_size": rows}))
    assert "<p>No expected bus bandwidth: the analysis had no fabric for this cluster" in page
    assert "Bandwidth is from transfer time" not in page
    assert "algorithm bandwidth (world size unknown)" in page
    assert [row[-2:] for row in cells(page)] == [["–", ""], ["–", ""]]
    assert he.nccl(S({})) == (
        '<section id="nccl"><h2>NCCL by message size</h2><p>No NCCL call of known message size '
        "in these reports.</p></section>"
    )


def test_what_was_not_judged_from_every_key_that_says_so() -> None:
    graphs = {"launches": 10, "traced": "graph", "note": "graph launches counted as compute"}
    summary = {"limits": ["one rank known"], "steps_with_unequal_collective_counts": [3, 7],
               "cuda_graphs": graphs}  # fmt: skip
    items = re.findall(r"<li>([^<]*)</li>", he.not_judged(S(summary), ["not drawn: x.png: <none>"]))
    assert items == [
        "Limit: one rank known",
        "Steps 3, 7: the ranks issued different collectives; only those in common were matched.",
        "CUDA graphs: graph launches counted as compute",
        "Not drawn: x.png: &lt;none&gt;",
    ]
    assert "<p>Everything recorded was judged.</p>" in he.not_judged(S({}), [])


def test_the_baseline_table_regressed_first_then_waited_at_most_40() -> None:
    changes = [{"what": f"rank {i} median step time", "old": 10.0, "new": 10.5, "unit": "ms",
                "percent": 5.0, "regressed": False} for i in range(45)]  # fmt: skip
    changes.append(
        {
            "what": "rank 0 median exposed comm",
            "old": 2.0,
            "new": 11.0,
            "unit": "ms",
            "percent": 450.0,
            "regressed": False,
            "note": "waited for rank 1",
        }
    )
    changes.append(
        {
            "what": "job median step time",
            "old": 14.0,
            "new": 23.0,
            "unit": "ms",
            "percent": 64.29,
            "regressed": True,
            "cause": "host gaps +9 ms",
        }
    )
    page = he.baseline(Regression("REGRESSED.", tuple(changes), "old/analysis"))
    assert "<p>Baseline: old/analysis.</p>" in page
    assert "<caption>1 of 47 figures regressed; 40 shown</caption>" in page
    rows = cells(page)
    assert len(rows) == 40
    assert rows[0] == ["REGRESSED", "job median step time", "14.000", "23.000", "ms", "+64.3 %",
                       "host gaps +9 ms"]  # fmt: skip
    assert rows[1] == ["waited", "rank 0 median exposed comm", "2.000", "11.000", "ms",
                       "+450.0 %", "waited for rank 1"]  # fmt: skip
    assert rows[2][:2] == ["ok", "rank 0 median step time"]
