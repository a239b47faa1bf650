"""One report's SQLite export, opened once and read for all the analysis needs of it: its NCCL
calls (`nccl.calls_in`) and its per-process step tables (`steps.tables_in`). The only module of
the analysis that opens an export."""

from __future__ import annotations

import sqlite3
import struct
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.nccl import NcclCall, calls_in
from nsysgen.analyze.read.steps import RankTables, tables_in

# SQLite's file header (sqlite.org/fileformat.html, "The Database Header"): 100 bytes, starting
# with this string; the page size at offset 16, the change counter at 24, the page count at 28,
# and at 92 the change counter that page count was written for.
_HEADER_SIZE = 100
_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Reduced:
    """What one report reduces to: the map step's result, small enough to send and cache."""

    name: str  # the export's stem: the report's name
    calls: list[NcclCall]
    tables: list[RankTables]


def export_problem(export: Path) -> str | None:
    """Why `export` is not a whole SQLite file, from its size and header alone (100 bytes: cheap
    for every report before any work starts); None if nothing shows. Needed before any read: a
    cut-off export often reads without an error, its lost pages holding rows, not the schema,
    and yields too few calls (or a crash in the analysis) instead of a refusal."""
    size = export.stat().st_size
    with export.open("rb") as handle:
        header = handle.read(_HEADER_SIZE)
    if size == 0:
        return "an empty file: 0 bytes"
    if len(header) < _HEADER_SIZE or not header.startswith(_MAGIC):
        return "not an SQLite file"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size  # how the header writes 64 KiB
    counter, pages, pages_for = (int.from_bytes(header[i : i + 4], "big") for i in (24, 28, 92))
    # The page count holds only where it was written at the last change (SQLite 3.7.0+: the
    # exports of nsys 2023.4.4 and 2025.3.1 have it); an older writer's says nothing.
    if counter == pages_for and size < pages * page_size:
        return f"cut short: {size} of its {pages * page_size} bytes"
    return None


def incomplete_export(export: Path, why: str) -> AnalyzeError:
    return AnalyzeError(
        f"{export}: not a complete nsys SQLite export ({why}); re-export it with "
        "nsys export, or delete it"
    )


def refuse_incomplete(exports: list[Path]) -> None:
    """Refuse the exports that `export_problem` finds fault with, every one named at once: a
    folder of many reports is fixed in one go, not one rerun per damaged file."""
    found = [(e, why) for e in exports if (why := export_problem(e)) is not None]
    if len(found) == 1:
        raise incomplete_export(*found[0])
    if found:
        lines = "\n".join(f"  {export}: {why}" for export, why in found)
        raise AnalyzeError(
            f"{len(found)} files are not complete nsys SQLite exports (re-export each with nsys "
            f"export, or delete it):\n{lines}"
        )


_VALUE_ERRORS = (TypeError, ValueError, KeyError, IndexError, OverflowError, struct.error)


def read_export(export: Path, name: str | None = None) -> Reduced:
    """The NCCL calls and step tables of the export at `export`, named `name` (its stem)."""
    name = export.stem if name is None else name
    why = export_problem(export)  # plan_tasks checked the others: this may be fresh from nsys
    if why is not None:
        raise incomplete_export(export, why)
    try:
        with closing(sqlite3.connect(export)) as db:
            # Text that is not UTF-8 (a name written by a program, not by nsys) is read with
            # replacement characters, never refused for it.
            db.text_factory = lambda data: data.decode("utf-8", "replace")
            present = {
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if not present:  # an SQLite file, but empty: every nsys export has tables
                raise incomplete_export(export, "an SQLite file without tables")
            return Reduced(name, calls_in(db, present, name), tables_in(db, present, name))
    except sqlite3.DatabaseError as exc:  # damage inside a file of the right size, a table
        # without the columns or rows nsys writes together (StringIds beside the names' ids)
        raise incomplete_export(export, f"SQLite says: {exc}") from None
    except _VALUE_ERRORS as exc:
        # A value of another type than nsys writes (null, text or bytes where it writes a
        # number or text): the export was written or edited by something else.
        raise incomplete_export(
            export, f"a value of a type nsys does not write ({type(exc).__name__}: {exc})"
        ) from None
