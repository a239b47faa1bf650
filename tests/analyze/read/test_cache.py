"""What `nsysgen analyze` keeps between runs (nsysgen/analyze/read/cache.py): a report's cache key,
the export cache's states, and the cached result's round trip under its key."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from nsysgen.analyze.read import cache
from nsysgen.analyze.read.report import read_export
from tests.analyze.read.test_map import EXPORT

MIB = 1 << 20


def test_the_report_key_reads_only_the_first_and_last_mib(tmp_path: Path) -> None:
    report = tmp_path / "r.nsys-rep"
    data = bytearray(3 * MIB)
    report.write_bytes(bytes(data))
    key = cache.report_key(report)
    assert sorted(key) == ["mtime_ns", "sha256_ends", "size"] and key["size"] == 3 * MIB
    stat = report.stat()

    def rewritten(offset: int) -> dict[str, object]:
        changed = bytearray(data)
        changed[offset] = 1
        report.write_bytes(bytes(changed))
        os.utime(report, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return cache.report_key(report)

    assert rewritten(0) != key  # the first MiB
    assert rewritten(3 * MIB - 1) != key  # the last
    assert rewritten(MIB + 5) == key  # the middle: a cheap key, by design (size and mtime hold)


def test_cache_states_of_an_export(tmp_path: Path) -> None:
    report, export = tmp_path / "r.nsys-rep", tmp_path / "r.sqlite"
    report.write_bytes(b"report")
    assert cache.cache_state(report, export) == "missing"
    assert cache.cache_state(report, None) == "missing"
    export.write_bytes(b"export")
    # No key file: the export is current while it is no older than its report.
    os.utime(report, (1_000, 1_000))
    os.utime(export, (2_000, 2_000))
    assert cache.cache_state(report, export) == "valid"
    os.utime(export, (500, 500))
    assert cache.cache_state(report, export) == "stale"
    # With a key file, the key alone decides, whatever the times say.
    key_file = cache.key_file(report)
    assert key_file.name == "r.nsysgen-export.json"
    key_file.write_text(json.dumps(cache.report_key(report)))
    assert cache.cache_state(report, export) == "valid"
    report.write_bytes(b"changed")
    assert cache.cache_state(report, export) == "stale"
    key_file.write_text("{damaged")
    assert cache.cache_state(report, export) == "stale"


def test_a_cached_result_round_trips_under_its_key_only(tmp_path: Path) -> None:
    export = tmp_path / EXPORT.name
    shutil.copy(EXPORT, export)
    reduced = read_export(export)
    key = cache.reduced_key(None, export, None)
    assert sorted(key) == ["code", "export"]
    cache.save_reduced(export, key, reduced)
    assert cache.reduced_file(export).name == "s17-hiccup_job3_rank0.nsysgen-reduced.json"
    assert cache.load_reduced(export, key) == reduced  # every table and row as read
    assert cache.load_reduced(export, {**key, "code": "other"}) is None
    assert not list(tmp_path.glob(".*.partial"))


def test_a_cache_that_cannot_be_written_is_skipped_not_raised(tmp_path: Path) -> None:
    """A report folder that takes no file (read-only, or here a path through a file): the
    result is not cached, and its clean-up raises nothing either."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    reduced = read_export(EXPORT)
    cache.save_reduced(blocker / "r.sqlite", {"k": 1}, reduced)
    assert blocker.read_text() == ""


def test_the_map_step_imports_nothing_of_the_analysis_outside_read() -> None:
    """The cache's code digest is read/'s modules: the map step (read/map.py) and everything
    it imports of the analysis must be there, or a change would not redo a cached result."""
    from scripts.layer_rules import imports, modules

    known = modules()
    seen, todo = set(), ["nsysgen.analyze.read.map"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo += [m for m in imports(known[module], known) if m.startswith("nsysgen.analyze")]
    outside = {m for m in seen if not m.startswith("nsysgen.analyze.read")}
    assert outside <= {"nsysgen.analyze.errors"}, outside
