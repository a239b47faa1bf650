"""`nsysgen regenerate` (nsysgen/drivers/regenerate.py), called directly: a folder with a file
removed is rewritten and the file named, a folder whose manifest cannot be read is counted as
not compilable (and the shared verifier still restored), an empty or missing output_dir.
tests/output/test_write_and_check.py covers changed inputs and hand edits through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.drivers.regenerate import RegenerateReport, regenerate_output, render
from nsysgen.errors import NsysgenError
from nsysgen.output.manifest import MANIFEST_NAME
from tests.conftest import RunCli


@pytest.fixture
def out(tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One compiled folder, out/a, with the verifier above it (relative paths, as typed)."""
    monkeypatch.chdir(tmp_path)
    assert run_cli("job.name=a", "output_dir=out").code == 0
    return Path("out")


def test_a_removed_file_is_written_again_and_named(out: Path) -> None:
    (out / "a" / "job.sbatch").unlink()
    report = regenerate_output(out, force=False)
    assert report == RegenerateReport(
        current=0, lines=["out/a: updated job.sbatch (created)"], updated=1
    )
    assert (out / "a" / "job.sbatch").is_file()
    assert regenerate_output(out, force=False) == RegenerateReport(current=1)
    assert render(report, out).splitlines()[-1] == "nsysgen regenerate: 1 updated, 0 current in out"


def test_an_unreadable_manifest_is_not_compilable_and_the_verifier_is_restored(out: Path) -> None:
    (out / "a" / MANIFEST_NAME).write_text("{")
    (out / "nsysgen-verify.py").unlink()
    report = regenerate_output(out, force=False)
    assert report.failed == 1 and report.updated == report.current == report.kept == 0
    assert report.lines == [
        f"out/a: not regenerated: error: out/a/{MANIFEST_NAME}: not readable as JSON (Expecting "
        "property name enclosed in double quotes: line 1 column 2 (char 1))",
        "out/nsysgen-verify.py: missing, written",
    ]
    assert (out / "nsysgen-verify.py").is_file()
    assert render(report, out).splitlines()[-1] == (
        "nsysgen regenerate: 0 updated, 0 current, 1 not compilable in out"
    )


def test_an_output_dir_without_folders_gets_no_verifier(tmp_path: Path) -> None:
    report = regenerate_output(tmp_path, force=True)
    assert report == RegenerateReport()
    assert list(tmp_path.iterdir()) == []
    assert render(report, tmp_path) == f"nsysgen regenerate: 0 updated, 0 current in {tmp_path}"


def test_a_missing_output_dir_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(NsysgenError, match=r"^error: output_dir .*/nope does not exist$"):
        regenerate_output(tmp_path / "nope", force=False)
