"""report.html in a real headless browser (Debian's chromium through Playwright): what a reader
sees at 2 ranks (the H200 two-rank exports with a deliberately slow rank 1, against the clean
run as baseline) and at 1,024 ranks (summary content with a planted straggler), with no console
error and no request leaving the page. Screenshots are kept: the folder is printed, and
NSYSGEN_SCREENSHOTS names one to keep them in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.render.html_report import render
from scripts import browser
from tests.analyze.synth_summary import summary as synthetic
from tests.bench.synth import analyze, planted_job
from tests.conftest import REPO, RunCli

pytestmark = pytest.mark.slow
STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"
SECTIONS = [
    "Lateness by rank and step",
    "Where each rank's step went",
    "NCCL by message size",
    "The window's edges",
    "What was not judged, and why",
]


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    named = os.environ.get("NSYSGEN_SCREENSHOTS")
    folder = Path(named) if named else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of report.html: {folder}")
    return folder


@pytest.fixture(autouse=True)
def _chromium() -> None:
    if browser.chromium() is None:
        pytest.fail(
            f"chromium ({browser.CHROMIUM}) or playwright missing: run "
            "tests/infra/install-system-deps.sh and pip install -e '.[test]'"
        )


def _analysed(tmp_path: Path, run_cli: RunCli, job: str, *extra: str) -> tuple[Path, str]:
    reports, out = tmp_path / job, tmp_path / f"{job}-analysis"
    reports.mkdir()
    for source in sorted(STEPS17.glob(f"s17-{job}_*.sqlite")):
        shutil.copy(source, reports / source.name)
    result = run_cli("analyze", str(reports), "--serial", "--output", str(out), *extra)
    assert result.code in (0, 1), result.err
    return out, result.out


def test_two_ranks_the_report_names_the_slow_rank_and_the_one_that_waited(
    tmp_path: Path, run_cli: RunCli, screens: Path
) -> None:
    clean, _ = _analysed(tmp_path, run_cli, "clean")
    out, printed = _analysed(tmp_path, run_cli, "slow", "--baseline", str(clean))
    first = printed.splitlines()[0]
    assert first.startswith("verdict: rank 1 late on 4 of 6 judged steps (9, 12, 13, 14)"), first
    opened = browser.inspect(out / "report.html", screens / "report-2-ranks.png")
    assert opened.errors == [] and opened.blocked == []
    assert opened.verdict.startswith(
        "Rank 1 late on 4 of 6 judged steps (9, 12, 13, 14) by 48.3 ms on average (the job's "
        "median step 127.4 ms, 84.4 ms had it been on time); rank 0 waited"
    ), opened.verdict
    # The comparison's verdict is about the job's step time, and its cause is rank 1.
    assert opened.regression.startswith("REGRESSED job median step time: "), opened.regression
    assert ": rank 1 late on 4 of 6 judged steps" in opened.regression
    assert opened.headings[:3] == ["nsysgen analyze", "Verdict", "Against the baseline"]
    assert [h for h in opened.headings if h in SECTIONS] == SECTIONS
    # Rank 0's longer step is marked as waiting for rank 1, not as a regression of its own.
    rank0 = next(row for row in opened.rows if "rank 0 median step time" in row)
    assert rank0.startswith("waited\t") and "waited for rank 1" in rank0, rank0
    # Rank 1's own step grew, and the row says which part of its work did.
    rank1 = next(row for row in opened.rows if "rank 1 median step time" in row)
    assert rank1.startswith("REGRESSED\t") and "its own work grew: host gaps" in rank1, rank1
    clean_view = browser.inspect(clean / "report.html", screens / "report-2-ranks-clean.png")
    assert clean_view.verdict.startswith("No rank late on the 6 judged steps of 2 ranks")


def test_1024_ranks_the_report_opens_fast_and_shows_distributions(
    tmp_path: Path, run_cli: RunCli, screens: Path
) -> None:
    """1,024 ranks' exports (bench/synth_export.py, 128 nodes), rank 700 planted late on steps
    10..13: the report names it and its node, in views of distributions, not of 1,024 rows."""
    planted_job(tmp_path / "job", 1024, late={700: dict.fromkeys(range(10, 14), 20.0)},
                slow_size=1 << 16)  # fmt: skip
    out = tmp_path / "analysis"
    analyze(run_cli, tmp_path / "job", out, "--serial", "--cluster", "p5")
    target = out / "report.html"
    opened = browser.inspect(target, screens / "report-1024-ranks.png")
    seconds, size = browser.open_report(target)
    print(f"\n1,024 ranks: report.html {size:,} bytes, opened in {seconds:.3f} s")
    assert opened.errors == [] and opened.blocked == []
    assert opened.verdict.startswith("Rank 700 late on 4 of 6 judged steps (10, 11, 12, 13)")
    assert [h for h in opened.headings if h in SECTIONS] == SECTIONS
    for heading in ("Top late ranks", "Ranks that waited most", "By node"):
        assert heading in opened.headings
    # Its node (the reports name it: ..._rank700_node87) heads the nodes.
    nodes = opened.rows[opened.rows.index(next(r for r in opened.rows if r.startswith("node\t"))) :]
    assert nodes[1].startswith("node 87\t8\t"), nodes[:2]
    assert size < 400_000 and seconds < 5.0


def test_1024_ranks_of_summary_content_read_the_same(tmp_path: Path, screens: Path) -> None:
    """The views at 1,024 ranks x 20 steps from summary content (tests/analyze/synth_summary.py),
    whose every rank waited 15 steps for rank 700."""
    target = tmp_path / "report.html"
    target.write_text(render(Summary.from_json(synthetic(ranks=1024, late=700))), encoding="utf-8")
    opened = browser.inspect(target, screens / "report-1024-ranks-summary.png")
    assert opened.errors == [] and opened.blocked == []
    assert opened.verdict.startswith("Rank 700 (slow rank) was late on 15 of 18 judged steps")
    assert opened.verdict.endswith("all 1,023 other ranks waited for it.")
    assert opened.size < 400_000


def test_64_ranks_from_synthetic_exports_a_reader_sees_the_straggler_and_the_slow_size(
    tmp_path: Path, run_cli: RunCli, screens: Path
) -> None:
    """64 ranks' exports (bench/synth_export.py), rank 37 planted late on steps 10..13 and the
    64 KiB all-reduce planted slow; analysed with the p5 cluster's fabric as the yardstick."""
    planted_job(tmp_path / "job", 64, late={37: dict.fromkeys(range(10, 14), 20.0)},
                slow_size=1 << 16)  # fmt: skip
    out = tmp_path / "analysis"
    analyze(run_cli, tmp_path / "job", out, "--serial", "--cluster", "p5")
    opened = browser.inspect(out / "report.html", screens / "report-64-ranks.png")
    assert opened.errors == [] and opened.blocked == []
    assert opened.verdict.startswith("Rank 37 late on 4 of 6 judged steps (10, 11, 12, 13)")
    for heading in ("Top late ranks", "Ranks that waited most", "By node"):
        assert heading in opened.headings
    top = [row for row in opened.rows if row.startswith("37\t")]
    assert top and "10, 11, 12, 13" in top[0]
    slow = next(row for row in opened.rows if row.startswith("64 KiB\t"))
    assert "longer than the larger 1 MiB" in slow, slow
    assert "EFA 3200 Gbps per node" in opened.text


def test_a_job_named_like_a_script_is_shown_as_text(tmp_path: Path, run_cli: RunCli) -> None:
    """Report names reach the page (the job's name is in its title): escaped, never run."""
    reports, out = tmp_path / "hostile", tmp_path / "analysis"
    reports.mkdir()
    for rank in (0, 1):
        source = STEPS17 / f"s17-slow_job2_rank{rank}.sqlite"
        shutil.copy(source, reports / f"<script>alert(1)_job2_rank{rank}.sqlite")
    result = run_cli("analyze", str(reports), "--serial", "--output", str(out))
    assert result.code == 0, result.err
    assert "<script" not in (out / "report.html").read_text().lower()
    opened = browser.inspect(out / "report.html")
    assert opened.errors == [] and opened.blocked == []
    assert "job <script>alert(1), run 2, 2 report(s)" in opened.text


def test_a_request_leaving_the_page_is_caught(tmp_path: Path) -> None:
    """The guards themselves: a page that fetches, or runs a script, is seen doing it (so an
    empty list means none)."""
    page = tmp_path / "leaky.html"
    page.write_text('<html><body><h2 id="verdict-headline">x</h2><script>alert("ran")</script>'
                    '<img src="https://example.invalid/pixel.png"></body></html>')  # fmt: skip
    opened = browser.inspect(page)
    assert opened.blocked == ["https://example.invalid/pixel.png"]
    assert "dialog: ran" in opened.errors
