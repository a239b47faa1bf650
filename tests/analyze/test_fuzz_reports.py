"""`nsysgen analyze` over hostile and damaged report folders (scripts/fuzz_reports.py):
every case exits 0 or 2, with no traceback, writing nothing outside --output. The slow tier runs
a slice of seeds; bench/fuzz_reports.py runs thousands."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.fuzz_reports import base, one

pytestmark = pytest.mark.slow  # about half a second a case

SEEDS = range(0, 80)


def test_hostile_and_damaged_reports_get_an_answer_or_a_clear_refusal(tmp_path: Path) -> None:
    folder = base(tmp_path / "base")
    codes: dict[int, int] = {}
    failed = []
    for seed in SEEDS:
        outcome, why = one(folder, tmp_path / "cases", seed)
        codes[outcome.code] = codes.get(outcome.code, 0) + 1
        if why is not None:
            failed.append((seed, why, outcome.damages, (outcome.err or outcome.out)[-400:]))
    assert not failed, failed[:5]
    assert codes.get(2, 0) > 10 and codes.get(0, 0) > 10  # both refusals and answers occur
