"""Which rank each process of the reports is: from the report names, refused where two reports
claim one rank."""

from __future__ import annotations

from nsysgen.analyze.read.steps import RankTables


class RankCollision(ValueError):
    """Two reports claim the same rank: reports of two runs (or a copy) in one folder."""


def assign_ranks(per_report: list[list[RankTables]]) -> list[RankTables]:
    """All processes of all reports, each with a distinct rank.

    Reports named without a rank are numbered in report order instead (every process, so that
    the numbering stays consistent). Two reports that name the same rank are refused: their
    processes are not one world, and renumbering them would hide a rank (RankCollision).
    """
    flat = [t for tables in per_report for t in tables]
    ranks = [t.rank for t in flat]
    claimed: dict[int, set[str]] = {}
    for t in flat:
        if t.rank is not None:
            claimed.setdefault(t.rank, set()).add(t.report)
    twice = {rank: sorted(reports) for rank, reports in claimed.items() if len(reports) > 1}
    if twice:
        rank, reports = min(twice.items())
        raise RankCollision(
            f"rank {rank} is in {len(reports)} reports ({', '.join(reports[:3])})"
            + (f" and {len(twice) - 1} more rank(s) twice" if len(twice) > 1 else "")
            + ": reports of different runs, or a copy, in one folder; move each run's reports "
            "into a folder of its own"
        )
    if None in ranks or len(set(ranks)) != len(ranks):
        ordered = sorted(flat, key=lambda t: (t.report, t.device or 0, t.pid))
        for rank, rank_tables in enumerate(ordered):
            rank_tables.rank = rank
    return sorted(flat, key=lambda t: t.rank or 0)


# Its step times come from CPU ranges where the others' are the GPU's: not comparable, so the
# rank is left out of the judgement, not only named.
NO_KERNELS = "its report holds no CUDA kernels"


def comparable(ranks: list[RankTables]) -> list[RankTables]:
    """The ranks whose figures can be set beside each other's: all but those without kernels
    where others have them."""
    missing = unjudged(ranks)
    return [t for t in ranks if missing.get(t.rank if t.rank is not None else -1) != NO_KERNELS]


def unjudged(ranks: list[RankTables]) -> dict[int, str]:
    """rank -> why its report cannot be judged beside the others': it lacks what theirs hold
    (CUDA kernels, NCCL kernels, step ranges). A table no report holds is a limit of the run
    (said elsewhere), not of one rank."""
    kernels = any(t.kernels_total for t in ranks)
    nccl = any(t.nccl_kernels_total for t in ranks)
    stepped = any(t.steps for t in ranks)
    out: dict[int, str] = {}
    for t in ranks:
        rank = t.rank if t.rank is not None else -1
        if kernels and not t.kernels_total:
            out[rank] = NO_KERNELS
        elif nccl and not t.nccl_kernels_total:
            out[rank] = "its report holds no NCCL kernels, the others' do"
        elif stepped and not t.steps:
            out[rank] = "its report holds no step ranges, the others' do"
    return out


NO_RANGE = "no range for it in the report"
NO_GATE = "the step before it has no range: no gate opens it"


def not_judged_steps(ranks: list[RankTables]) -> dict[int, dict[int, str]]:
    """step -> rank -> why the rank cannot be judged on it: a hole in the rank's step ranges
    (a range lost, or never closed), and the step after the hole, which no gate opens
    (nsysgen/analyze/read/steps.py): its critical path is not walked."""
    found: dict[int, dict[int, str]] = {}
    for t in ranks:
        numbers = sorted({row.step for row in t.steps})
        if t.rank is None or len(numbers) < 2:
            continue
        for step in sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers)):
            found.setdefault(step, {})[t.rank] = NO_RANGE
            if step + 1 in numbers:
                found.setdefault(step + 1, {})[t.rank] = NO_GATE
    return dict(sorted(found.items()))
