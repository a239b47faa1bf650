"""One report's SQLite export, opened once and read for all the analysis needs of it: its NCCL
calls (`nccl.calls_in`) and its per-process step tables (`steps.tables_in`). The only module of
the analysis that opens an export."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from nsysgen.analyze.nccl import NcclCall, calls_in
from nsysgen.analyze.steps import RankTables, tables_in


@dataclass(frozen=True)
class Reduced:
    """What one report reduces to: the map step's result, small enough to send and cache."""

    name: str  # the export's stem: the report's name
    calls: list[NcclCall]
    tables: list[RankTables]


def read_export(export: Path, name: str | None = None) -> Reduced:
    """The NCCL calls and step tables of the export at `export`, named `name` (its stem)."""
    name = export.stem if name is None else name
    with closing(sqlite3.connect(export)) as db:
        present = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        return Reduced(name, calls_in(db, present, name), tables_in(db, present, name))
