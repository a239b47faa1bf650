"""The baseline gate compares the transfer's bus bandwidth where both analyses have it: a late
peer stretches the wall time of every collective it joins, and that is a straggler (named by the
verdict), not a slower fabric."""

from __future__ import annotations

from typing import Any

from nsysgen.analyze.judge.regress import compare
from nsysgen.analyze.judge.summary_types import Summary


def _summary(busbw: float, transfer: float | None) -> Summary:
    row: dict[str, Any] = {"op": "AllReduce", "size": "16 MiB", "busbw_GBps": busbw}
    if transfer is not None:
        row["transfer_busbw_GBps"] = transfer
    return Summary.from_json({"ranks": [], "nccl_by_size": [row]})


def _lines(old: Summary, new: Summary) -> list[str]:
    return [c.line() for c in compare(old, new, 0.10, 0.1)]


def test_a_late_peer_halving_the_wall_bandwidth_is_not_a_fabric_regression() -> None:
    assert _lines(_summary(100.0, 100.0), _summary(50.0, 99.0)) == [
        "       ok  AllReduce 16 MiB transfer bus bandwidth: 100.000 -> 99.000 GB/s (-1.0 %)"
    ]


def test_a_slower_transfer_regresses() -> None:
    assert _lines(_summary(100.0, 100.0), _summary(60.0, 60.0)) == [
        "REGRESSED  AllReduce 16 MiB transfer bus bandwidth: 100.000 -> 60.000 GB/s (-40.0 %)"
    ]


def test_an_older_baseline_without_transfer_figures_compares_wall_bandwidth() -> None:
    assert _lines(_summary(100.0, None), _summary(50.0, 99.0)) == [
        "REGRESSED  AllReduce 16 MiB bus bandwidth: 100.000 -> 50.000 GB/s (-50.0 %)"
    ]
