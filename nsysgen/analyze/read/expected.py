"""The run contract beside the reports (nsysgen-expect.json in the report folder, or in the
folder above a run's): which ranks the run was to record, so that a rank whose report is
missing is named as not judged, never passed over as if the job were smaller."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nsysgen.reports.contract import EXPECT_FILE, ContractError, expected_ranks, read_expect

NO_REPORT = "no report: the run contract expects one"


@dataclass(frozen=True)
class Comparison:
    """The reports' ranks against the contract's: what is missing, what it did not expect."""

    missing: list[int]
    unexpected: list[int]


def beside(reports: Path) -> Path | None:
    """The contract beside the reports, or None where there is none."""
    folder = reports if reports.is_dir() else reports.parent
    for candidate in (folder / EXPECT_FILE, folder.parent / EXPECT_FILE):
        if candidate.is_file():
            return candidate
    return None


def compare(contract: Path, present: set[int]) -> Comparison | str:
    """The reports' ranks against the contract's, or why the contract could not be read. The
    expected ranks are walked one at a time: a 100,000-node grid is never held whole."""
    try:
        expect = read_expect(contract)
    except (OSError, ValueError, ContractError) as error:
        return f"{contract} could not be read ({error}): ranks without a report are not named"
    missing: list[int] = []
    seen: set[int] = set()
    for rank in expected_ranks(expect):
        if rank in present:
            seen.add(rank)
        else:
            missing.append(rank)
    return Comparison(sorted(set(missing)), sorted(present - seen))
