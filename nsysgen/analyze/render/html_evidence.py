"""The report's sections past lateness and the step breakdown: NCCL by message size against the
fabric's expected bus bandwidth, what was not judged and why, and the comparison against a
baseline. Figures a row may not hold (a baseline from an older analysis) are shown as absent, never
guessed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import html_svg as svg
from nsysgen.analyze.render.html_sections import figure, para, table
from nsysgen.analyze.render.html_verdict import Regression

# The expected bus bandwidth of a size and whether it is flagged, under the names the analysis
# may give them (the first present is taken).
_EXPECTED = ("expected_busbw_GBps", "fabric_busbw_GBps", "expected_GBps")
_RATIO = ("fraction_of_expected", "busbw_fraction_of_expected", "of_expected")
_FLAG = ("flag", "flagged", "slow", "below_expected")
# Bandwidth from each call's transfer time (its wait for the last peer taken out,
# nsysgen/analyze/judge/bandwidth.py); an older summary's whole-kernel figures where it has none.
_BUS = ("transfer_busbw_GBps", "busbw_GBps")
_ALGBW = ("transfer_algbw_GBps", "algbw_GBps")
_TRANSFER_NOTE = (
    "Bandwidth is from transfer time: each call's kernel time less its wait for the last rank "
    "to arrive (matched across ranks); a call not matched keeps its whole kernel time."
)


def _pick(row: Mapping[str, Any], keys: Sequence[str]) -> Any:
    return next((row[k] for k in keys if row.get(k) is not None), None)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _flag_text(value: object) -> str:
    if value is None or value is False:
        return ""
    return "FLAGGED" if value is True else str(value)


def nccl(summary: Summary) -> str:
    head = '<section id="nccl"><h2>NCCL by message size</h2>'
    rows: Sequence[Mapping[str, Any]] = summary.nccl_by_size
    if not rows:
        return head + para("No NCCL call of known message size in these reports.") + "</section>"
    out = [head]
    if summary.fabric:
        out.append(para(_fabric_text(summary.fabric, summary.world_size)))
    elif not any(_pick(r, _EXPECTED) is not None for r in rows):
        out.append(para("No expected bus bandwidth: the analysis had no fabric for this "
                        "cluster, so no size is judged against one."))  # fmt: skip
    if any("transfer_busbw_GBps" in r for r in rows):
        out.append(para(_TRANSFER_NOTE))
    ops: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        ops[str(row.get("op", "?"))].append(row)
    for op, op_rows in sorted(ops.items()):
        op_rows.sort(key=lambda r: int(r.get("size_bytes") or 0))
        sizes = [str(r.get("size", r.get("size_bytes"))) for r in op_rows]
        bus = [_number(_pick(r, _BUS)) for r in op_rows]
        expected = [_number(_pick(r, _EXPECTED)) for r in op_rows]
        flagged = [j for j, r in enumerate(op_rows) if _flag_text(_pick(r, _FLAG))]
        series: list[svg.Series] = []
        if any(v is not None for v in bus):
            series.append(("bus bandwidth (median call's transfer)", "#55a868", bus, ""))
        else:
            algbw = [_number(_pick(r, _ALGBW)) for r in op_rows]
            series.append(("algorithm bandwidth (world size unknown)", "#8c8c8c", algbw, ""))
        if any(v is not None for v in expected):
            series.append(("expected from the fabric", "#333333", expected, "6 4"))
        chart = svg.lines(sizes, series, f"{op} bandwidth by message size", "GB/s", log=True,
                          marks=flagged)  # fmt: skip
        out.append(f"<h3>{escape(op)}</h3>")
        out.append(figure(chart, f"{op}: bandwidth by message size (GB/s, log scale); ringed "
                                 "points are flagged sizes"))  # fmt: skip
        out.append(
            table(
                [
                    "size",
                    "calls",
                    "median kernel (µs)",
                    "median transfer (µs)",
                    "bus bandwidth, transfer (GB/s)",
                    "expected (GB/s)",
                    "of expected",
                    "flag",
                ],  # fmt: skip
                [
                    (
                        r.get("size"),
                        r.get("calls"),
                        _number(r.get("median_us")),
                        _number(r.get("transfer_median_us")),
                        _number(_pick(r, _BUS)),
                        _number(_pick(r, _EXPECTED)),
                        _ratio(r),
                        _flag_text(_pick(r, _FLAG)),
                    )
                    for r in op_rows
                ],
            )
        )
    return "".join(out) + "</section>"


def _fabric_text(fabric: Mapping[str, Any], world: object) -> str:
    links = [
        f"NVLink {fabric['nvlink_GBps']:g} GB/s per GPU"
        if _number(fabric.get("nvlink_GBps")) else "NVLink unknown",
        f"EFA {fabric['efa_Gbps']:g} Gbps per node"
        if _number(fabric.get("efa_Gbps")) else "EFA unknown",
    ]  # fmt: skip
    return (
        f"Fabric from {fabric.get('source', '?')}: {fabric.get('gpus_per_node', '?')} GPUs per "
        f"node, {fabric.get('nodes', '?')} node(s), {', '.join(links)}; {world} rank(s): within "
        "one node NVLink's rate is expected, across nodes the node's EFA rate."
    )


def _ratio(row: Mapping[str, Any]) -> str | None:
    ratio = _number(_pick(row, _RATIO))
    if ratio is None:
        bus, expected = _number(_pick(row, _BUS)), _number(_pick(row, _EXPECTED))
        ratio = bus / expected if bus is not None and expected else None
    return None if ratio is None else f"{100 * ratio:.0f} %"


def not_judged(summary: Summary, notes: Sequence[str]) -> str:
    items = [f"Limit: {text}" for text in summary.limits]
    unequal = summary.steps_with_unequal_collective_counts
    if unequal:
        items.append(
            f"Steps {', '.join(map(str, unequal))}: the ranks issued different collectives; "
            "only those in common were matched."
        )
    if summary.cuda_graphs:
        items.append(f"CUDA graphs: {summary.cuda_graphs['note']}")
    items += [note[:1].upper() + note[1:] for note in notes]
    head = '<section id="not-judged"><h2>What was not judged, and why</h2>'
    if not items:
        return head + para("Everything recorded was judged.") + "</section>"
    return head + "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul></section>"


def _row(change: Mapping[str, Any]) -> tuple[object, ...]:
    mark = "REGRESSED" if change.get("regressed") else "waited" if change.get("note") else "ok"
    percent = _number(change.get("percent"))
    return (
        mark,
        change.get("what"),
        _number(change.get("old")),
        _number(change.get("new")),
        change.get("unit"),
        None if percent is None else f"{percent:+.1f} %",
        change.get("note") or change.get("cause") or "",
    )


def baseline(found: Regression) -> str:
    """The comparison: the regressed figures first, then those that grew by waiting for a late
    peer (not that rank's regression), then the rest; at most 40 rows."""

    def order(c: Mapping[str, Any]) -> tuple[int, float, str]:
        kind = 0 if c.get("regressed") else 1 if c.get("note") else 2
        return kind, -abs(_number(c.get("percent")) or 0.0), str(c.get("what"))

    shown = sorted(found.changes, key=order)[:40]
    head = '<section id="baseline"><h2>Against the baseline</h2>'
    return (
        head
        + para(f"Baseline: {found.source}.")
        + table(
            ["", "figure", "baseline", "this run", "unit", "change", "note"],
            [_row(c) for c in shown],
            f"{len(found.regressed)} of {len(found.changes)} figures regressed"
            + (f"; {len(shown)} shown" if len(shown) < len(found.changes) else ""),
        )
        + "</section>"
    )
