"""OUT/report.html: one self-contained page per analysis, verdict first, then the evidence.

Self-contained: inline CSS, inline SVG, no script, no font, no image or link fetched; it opens
offline and from a mail attachment alike. Deterministic: no clock or path of this machine in
it, so an unchanged analysis writes the same bytes (the run record compares them). Every text
from the reports (names of reports, ranks, operations) is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Protocol

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render import console, html_evidence, html_sections, views
from nsysgen.analyze.render.html_verdict import Regression, regression, verdict

NAME = "report.html"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;margin:0;
 background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px;background:#fff}
h1{font-size:20px;margin:8px 0 2px}h2{font-size:17px;margin:28px 0 8px;
 border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}
.label{color:#666;margin:0 0 12px}
.verdict{border-left:6px solid #2e7d32;background:#eef6ee;padding:10px 14px;margin:12px 0}
.verdict.bad{border-color:#b2182b;background:#fbeeee}
.verdict p{margin:4px 0}.verdict .headline{font-size:16px;font-weight:600}
nav{font-size:13px;margin:8px 0 0}nav a{margin-right:12px;color:#2166ac}
table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}
caption{caption-side:top;text-align:left;color:#666;padding:2px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f3f3f3}.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:10px 0 16px;overflow-x:auto}figcaption{color:#666;font-size:12px}
code{background:#f3f3f3;padding:0 3px}
"""


LATE_MEANS = (
    "Late: a rank's share of the step's critical path beyond the ranks on time (its GPU idle "
    "and its kernels' excess), the time the job lost to it; waited: the time a rank lost "
    "waiting for the late ones."
)


class ReportOptions(Protocol):
    """What the report needs of the analysis's options (reduce.Options has it)."""

    @property
    def baseline(self) -> Path | None: ...


def _verdict_box(summary: Summary, found: Regression | None) -> str:
    said = verdict(summary)
    bad = said.late or (found is not None and bool(found.regressed))
    parts = [f'<p class="headline" id="verdict-headline">{escape(said.headline)}</p>']
    parts += [f"<p>{escape(d)}</p>" for d in said.details]
    parts.append(f'<p class="meaning">{escape(LATE_MEANS)}</p>')
    if found is not None:
        parts.append(f'<p class="headline" id="regression-headline">{escape(found.headline)}</p>')
    return (
        f'<section class="verdict{" bad" if bad else ""}" id="verdict">'
        '<h2 style="border:0;margin:0 0 4px">Verdict</h2>' + "".join(parts) + "</section>"
    )


def render(
    summary: Summary,
    notes: Sequence[str] = (),
    files: Sequence[str] = (),
) -> str:
    """The report's HTML. `notes`: what the analysis said it did not draw or compute."""
    found = regression(summary)
    label = summary.label or f"{len(summary.reports)} report(s)"
    ranks = views.stepped(summary)
    sections = [
        ("lateness", "Lateness", html_sections.lateness(summary)),
        ("breakdown", "Where the step went", html_sections.breakdown(summary)),
        ("nccl", "NCCL by size", html_evidence.nccl(summary)),
        ("window", "Window's edges", html_sections.window(summary)),
        ("not-judged", "Not judged", html_evidence.not_judged(summary, notes)),
    ]
    if found is not None:
        sections.insert(0, ("baseline", "Against the baseline",
                            html_evidence.baseline(found)))  # fmt: skip
    nav = "".join(f'<a href="#{key}">{escape(name)}</a>' for key, name, _ in sections)
    scale = (
        f"{len(ranks):,} ranks with steps, {len(summary.reports):,} report(s), "
        f"world size {summary.world_size}"
    )
    listing = "".join(f"<li><code>{escape(name)}</code></li>" for name in files)
    files_html = (
        f'<section id="files"><h2>Files of this analysis</h2><ul>{listing}</ul></section>'
        if files
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        # No fetch of any kind: a report opened from a review or an air-gapped cluster.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>nsysgen analyze: {escape(label)}</title><style>{CSS}</style></head>"
        f'<body><main><h1>nsysgen analyze</h1><p class="label">{escape(label)} · '
        f"{escape(scale)}</p>"
        + _verdict_box(summary, found)
        + f"<nav>{nav}</nav>"
        + "".join(html for _, _, html in sections)
        + files_html
        + "</main></body></html>\n"
    )


def write(
    summary: Summary,
    options: ReportOptions | None,
    lines: list[str],
    written: Sequence[Path],
    out: Path,
) -> Path:
    """OUT/report.html from the analysis's summary (its "baseline" holds the comparison, when
    `options.baseline` was given); its path is added to `lines`."""
    # summary.json's limits are listed from the summary; the other notes from what was said.
    notes = [line for line in lines if console.is_note(line) and not line.startswith("limit:")]
    names = [path.name for path in written if path.parent == out] + [NAME]
    target = out / NAME
    target.write_text(render(summary, notes, sorted(set(names))), encoding="utf-8")
    lines.append(f"report: {target}")
    return target
