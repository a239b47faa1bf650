"""Hostile and damaged report folders for `nsysgen analyze` (issue 48's fuzzer): a small
synthetic two-rank job (bench/synth_export.py: step ranges, compute and NCCL kernels with NCCL's
NVTX ranges), then, per case, one to three damages drawn from a seed: hostile text in any string
an export holds (kernel, range and NCCL names), dropped tables, deleted rows, numbers made null,
negative, huge or text, exports cut short, hostile file names, a second job or a second copy of a
rank. Each case runs the real CLI in this process; it passes when the exit is 0 or 2 with no
traceback and nothing is written outside the case's folder. The shipped verifier then reads and
checks the same exports against a steps setup's contract: only a refusal by name may end it.

tests/analyze/test_fuzz_reports.py runs some in the slow tier; bench/fuzz_reports.py runs
thousands and prints the counts.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import random
import shutil
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nsysgen.cli import main
from scripts.golden_sources import REPO

sys.path.insert(0, str(REPO))
from bench.synth_export import Plant, Shape, job  # noqa: E402

HOSTILE: list[str | bytes] = [
    "",
    " ",
    "$x$ and $$",
    "${HOME}$(id)`id`",
    "../../../../tmp/PWNED",
    "a/b\\c",
    "=cmd|' /C calc'!A0",
    "+1+1",
    "@SUM(A1)",
    "step 9",
    "step -1",
    "step 99999999999999999999999",
    "<script>alert(1)</script>",
    "%s%n%x{}{0}",
    "\u202eevil\u202c",
    "line\nbreak\ttab\r",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL" + "x" * 5000,
    "x" * 100_000,
    "\x00nul",
    b"\xff\xfe not utf-8 \x80",
    "ncclAllReduce",
    "nccl:/../x",
]
NAMES = ["$HOME", "a b", "x" * 200, "%q{SLURM_JOB_ID}", "\u00e9t\u00e9", "-rf", "..", "job 1"]
JOB_NAMES = [
    "$x^$_{a}",
    "j" * 200,
    "a b",
    "\u00e9t\u00e9",
    "%s%n",
    "-rf",
    "<b>x<b>",
]  # no "/": a name, not a path
OK_EXITS = {0, 2}


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    damages: list[str]


def base(folder: Path) -> Path:
    """The undamaged job (2 ranks, 4 steps, 3 kernels and one all-reduce a step)."""
    if not folder.is_dir():
        job(folder, Shape(ranks=2, steps=range(8, 12), kernels=3, sizes=(1 << 20,)), Plant())
    return folder


def _tables(db: sqlite3.Connection) -> list[str]:
    return sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'"))


def _hostile_string(db: sqlite3.Connection, rng: random.Random) -> str:
    value = rng.choice(HOSTILE)
    ids = [r[0] for r in db.execute("SELECT id FROM StringIds")]
    if not ids:
        return "no strings"
    target = rng.choice(ids)
    db.execute("UPDATE StringIds SET value = ? WHERE id = ?", (value, target))
    return f"string {target} = {value!r:.40}"


def _hostile_range(db: sqlite3.Connection, rng: random.Random) -> str:
    value = rng.choice(HOSTILE)
    db.execute(
        "UPDATE NVTX_EVENTS SET text = ?, textId = NULL WHERE rowid IN "
        "(SELECT rowid FROM NVTX_EVENTS ORDER BY random() LIMIT 3)",
        (value,),
    )
    return f"ranges = {value!r:.40}"


def _drop_table(db: sqlite3.Connection, rng: random.Random) -> str:
    table = rng.choice(_tables(db))
    db.execute(f'DROP TABLE "{table}"')
    return f"drop {table}"


def _delete_rows(db: sqlite3.Connection, rng: random.Random) -> str:
    table = rng.choice(_tables(db))
    share = rng.choice([0.1, 0.5, 0.9, 1.0])
    db.execute(f'DELETE FROM "{table}" WHERE abs(random()) % 100 < ?', (int(share * 100),))
    return f"delete {share:.0%} of {table}"


def _bad_numbers(db: sqlite3.Connection, rng: random.Random) -> str:
    table = rng.choice(_tables(db))
    columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
    column = rng.choice(columns)
    value = rng.choice([None, -1, 0, 2**62, -(2**62), "text", 1.5, b"\x00\x01"])
    db.execute(
        f'UPDATE "{table}" SET "{column}" = ? WHERE rowid IN '
        f'(SELECT rowid FROM "{table}" ORDER BY random() LIMIT 5)',
        (value,),
    )
    return f"{table}.{column} = {value!r}"


DB_DAMAGES: list[Callable[[sqlite3.Connection, random.Random], str]] = [
    _hostile_string,
    _hostile_string,
    _hostile_range,
    _drop_table,
    _delete_rows,
    _bad_numbers,
    _bad_numbers,
]


def _file_damage(folder: Path, rng: random.Random) -> str:
    exports = sorted(folder.glob("*.sqlite"))
    export = rng.choice(exports)
    kind = rng.choice(["cut", "rename", "other job", "same rank", "garbage", "job name"])
    if kind == "cut":
        data = export.read_bytes()
        export.write_bytes(data[: rng.randrange(len(data))])
    elif kind == "rename":
        name = rng.choice(NAMES)
        export.rename(folder / f"synth_job1_rank{rng.randrange(3)}_{name}.sqlite")
    elif kind == "other job":
        shutil.copy(export, folder / f"other_job1_rank{rng.randrange(3)}_node0.sqlite")
    elif kind == "same rank":
        shutil.copy(export, export.with_name(f"{export.stem}_copy.sqlite"))
    elif kind == "job name":  # every report's: one job, of a hostile name
        job_name = rng.choice(JOB_NAMES)
        for rank, each in enumerate(exports):
            each.rename(folder / f"{job_name}_job1_rank{rank}_node0.sqlite")
    else:
        (folder / f"synth_job1_rank{rng.randrange(2, 4)}_node0.sqlite").write_bytes(
            rng.randbytes(rng.randrange(0, 9000))
        )
    return f"file {kind} {export.name}"


def damaged(base_folder: Path, case: Path, seed: int) -> list[str]:
    """Copy the base job into case/reports and damage it; what was done."""
    rng = random.Random(seed)
    reports = case / "reports"
    shutil.copytree(base_folder, reports)
    done: list[str] = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.25:
            done.append(_file_damage(reports, rng))
            continue
        exports = sorted(reports.glob("*.sqlite"))
        export = rng.choice(exports)
        try:
            with contextlib.closing(sqlite3.connect(export)) as db:
                done.append(rng.choice(DB_DAMAGES)(db, rng))
                db.commit()
        except sqlite3.DatabaseError:
            done.append(f"{export.name}: not damaged further (not a database)")
    return done


def run(case: Path, damages: list[str]) -> Outcome:
    """The CLI on the case's reports, in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(
                ["analyze", str(case / "reports"), "--serial", "--output", str(case / "out")]
            )
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except BaseException as error:  # noqa: BLE001 - a crash is what the fuzzer looks for
            code = -1
            err.write(f"Traceback (escaped main): {error!r}\n")
    return Outcome(code, out.getvalue(), err.getvalue(), damages)


def failure(case: Path, outcome: Outcome) -> str | None:
    """Why the case fails, or None."""
    if outcome.code not in OK_EXITS:
        return f"exit {outcome.code}"
    if "Traceback" in outcome.out + outcome.err or "internal error" in outcome.err:
        return "traceback"
    outside = [
        p
        for p in case.rglob("*")
        if p.is_file()
        and not p.is_relative_to(case / "out")
        and not p.is_relative_to(case / "reports")
    ]
    if outside:
        return f"wrote outside --output: {outside[:2]}"
    return None


def one(base_folder: Path, scratch: Path, seed: int) -> tuple[Outcome, str | None]:
    case = scratch / f"case{seed}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    damages = damaged(base_folder, case, seed)
    outcome = run(case, damages)
    why = failure(case, outcome) or verify_case(case, _expect())
    if why is None:
        shutil.rmtree(case, ignore_errors=True)
    return outcome, why


@functools.cache
def _expect() -> object:
    """A steps setup's run contract (committed golden output): what verify checks against."""
    path = REPO / "tests/golden/local-python-steps/out/local-python-steps/nsysgen-expect.json"
    return json.loads(path.read_text())


def verify_case(case: Path, expect: object) -> str | None:
    """The shipped verifier's reading and checking of each (damaged) export of the case, as
    `check_one` runs them: only a sqlite3.Error may end a read (it names the report unreadable);
    anything else raised is a failure (an exit 3 of nsysgen-verify.py)."""
    from nsysgen.shipped.verify.checks import check_contents
    from nsysgen.shipped.verify.contents import read_contents

    for export in sorted((case / "reports").glob("*.sqlite")):
        try:
            contents = read_contents(export)
        except (sqlite3.Error, TypeError, ValueError, OverflowError):
            continue  # "unreadable", in check_one's words
        except Exception as error:  # noqa: BLE001 - what the fuzzer looks for
            return f"verify read {export.name}: {error!r}"
        try:
            check_contents(expect, contents, collectors=True)  # type: ignore[arg-type]
        except Exception as error:  # noqa: BLE001 - what the fuzzer looks for
            return f"verify check {export.name}: {error!r}"
    return None
