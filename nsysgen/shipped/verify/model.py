"""What a check finds: per expected report, and for the whole job; and verify's exit codes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from nsysgen.reports.contract import EXPECT_FILE

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_BAD_INPUT = 2
MANIFEST_FILE = "nsysgen-manifest.json"
# What FOLDER must be, in the messages that refuse one.
SETUP_FOLDER = f"a compiled setup folder (one holding {EXPECT_FILE}, e.g. generated/fsdp-p4de)"
SETUPS_SHOWN = 8  # setup folders a refusal names, of a tree's
# Slurm: records of a run, in its folder: .nsysgen/nodes (written by job.sbatch) and
# .nsysgen/task<N>/ (nsys's TMPDIR, where a report being written when nsys was killed stays).
STATE_DIR = ".nsysgen"
# Planned report names hold <token>s for what only the run knows (<jobid>, <host3>, <pid0>).
TOKEN = re.compile(r"<([A-Za-z0-9_]+)>")
ANY = r"[^/]*?"


class BadInput(Exception):
    """Input that verify cannot work with: exit 2 with this message."""


@dataclass
class Numbering:
    """How the step helper numbered the steps of one process of a report (its numbering mark)."""

    process: int  # the pid
    source: str  # counter | count | fallback
    text: str  # the counter; how nsysgen counted; or why the counter was not used
    per_step: int  # optimizer steps per training step, as the helper learned or was told
    checked: int  # the counter's step-to-step advances checked before the window (0: none)


@dataclass
class Finding:
    """One expected report (or one unexpected file) and what is wrong with it."""

    label: str  # "rank 9", "node 1", "pod ...-worker-0", or "extra"
    node: str  # node name (index), as far as known
    status: str  # ok | missing | empty | unreadable | wrong | extra
    report: str | None = None
    problems: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numbering: list[Numbering] = field(default_factory=list)  # per process, where marked


@dataclass
class Result:
    job: str
    job_id: str | None
    report_dir: str
    nsys_version: str
    findings: list[Finding]
    notes: list[str]

    @property
    def complete(self) -> bool:
        return all(f.status == "ok" for f in self.findings)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.complete else EXIT_INCOMPLETE


def steps_text(steps: Sequence[int]) -> str:
    if not steps:
        return "none"
    # Consecutive (sorted, distinct): as many as the span, never a range the size of the span
    # built (a range named "step 99999999999999999999" is a report's text, not a step count).
    if all(b == a + 1 for a, b in zip(steps, steps[1:], strict=False)):
        return f"{steps[0]}..{steps[-1]}" if len(steps) > 1 else str(steps[0])
    shown = ",".join(map(str, steps[:STEPS_SHOWN]))
    return shown + (f", ... ({len(steps)} in all)" if len(steps) > STEPS_SHOWN else "")


STEPS_SHOWN = 20  # step numbers listed where they are not consecutive


def plural(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"
