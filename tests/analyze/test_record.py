"""The run record of `nsysgen analyze` (nsysgen/analyze/record.py): what the key depends on, a
save replayed only while every output it names is unchanged and inside OUT, and a damaged or
foreign record taken as no record."""

from __future__ import annotations

import json
from pathlib import Path

from nsysgen.analyze import record


def outputs(out: Path) -> list[Path]:
    out.mkdir()
    (out / "summary.json").write_text('{"a": 1}\n')
    (out / "steps.csv").write_text("rank,step\n")
    return [out / "summary.json", out / "steps.csv"]


def test_the_key_follows_results_options_and_the_bytes_of_inputs(tmp_path: Path) -> None:
    log = tmp_path / "nccl-tests.log"
    log.write_text("a")
    baseline = tmp_path / "old"
    baseline.mkdir()
    (baseline / "summary.json").write_text("{}")
    key = record.run_key([{"r": 1}], {"x": 1}, [log, baseline, None])
    assert key == record.run_key([{"r": 1}], {"x": 1}, [log, baseline, None])
    assert len(key) == 64 and len(record.analysis_digest()) == 64
    assert key != record.run_key([{"r": 2}], {"x": 1}, [log, baseline, None])
    assert key != record.run_key([{"r": 1}], {"x": 2}, [log, baseline, None])
    log.write_text("b")  # the log's bytes, not its name
    changed = record.run_key([{"r": 1}], {"x": 1}, [log, baseline, None])
    assert changed != key
    (baseline / "summary.json").write_text("[]")  # a folder: its summary.json's bytes
    assert record.run_key([{"r": 1}], {"x": 1}, [log, baseline, None]) != changed
    # A missing input is a digest of its own, not an error.
    gone = record.run_key([], {}, [tmp_path / "nowhere"])
    assert gone == record.run_key([], {}, [tmp_path / "nowhere" / "else"])


def test_a_saved_run_is_replayed_until_an_output_changes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    written = outputs(out)
    record.save(out, "k1", written, ["verdict: fine", "wrote x"], 1)
    saved = json.loads((out / record.RECORD).read_text())
    assert sorted(saved["outputs"]) == ["steps.csv", "summary.json"]
    assert record.replay(out, "k1") == (["verdict: fine", "wrote x"], 1)
    assert record.replay(out, "k2") is None  # another key
    (out / "steps.csv").write_text("rank,step\n0,1\n")
    assert record.replay(out, "k1") is None  # an edited output
    (out / "steps.csv").write_text("rank,step\n")
    assert record.replay(out, "k1") is not None
    (out / "steps.csv").unlink()
    assert record.replay(out, "k1") is None  # a missing one
    assert not list(out.glob(".*.partial"))


def test_an_output_outside_out_makes_the_run_unrecordable(tmp_path: Path) -> None:
    out = tmp_path / "out"
    written = outputs(out)
    elsewhere = tmp_path / "elsewhere.csv"
    elsewhere.write_text("x")
    record.save(out, "k", [*written, elsewhere], ["x"], 0)
    assert not (out / record.RECORD).exists()
    assert record.replay(out, "k") is None


def test_a_damaged_or_foreign_record_is_no_record(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outputs(out)
    (tmp_path / "secret").write_text("s")
    target = out / record.RECORD
    digest = record._file_digest(tmp_path / "secret")
    for text in (
        "{not json",
        "[]",
        json.dumps({"key": "k", "outputs": {}, "lines": ["x"]}),  # no code
        json.dumps({"key": "k", "outputs": {}, "lines": ["x"], "code": "1"}),
        json.dumps({"key": "k", "outputs": {}, "lines": [1], "code": 0}),
        # A name that leaves OUT, even one whose bytes match.
        json.dumps({"key": "k", "outputs": {"../secret": digest}, "lines": [], "code": 0}),
        json.dumps(
            {"key": "k", "outputs": {str(tmp_path / "secret"): digest}, "lines": [], "code": 0}
        ),  # fmt: skip
    ):
        target.write_text(text)
        assert record.replay(out, "k") is None, text
    target.write_text(json.dumps({"key": "k", "outputs": {}, "lines": ["x"], "code": 0}))
    assert record.replay(out, "k") == (["x"], 0)
