"""`nsysgen check` and `nsysgen regenerate` as verbs (nsysgen/cli/folders.py): output_dir is
`generated` unless given (the last one wins), any other word is a usage error, and the exit
code is 1 for drift, for a folder kept and for a folder that cannot be compiled."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.cli.args import Arguments, UsageError
from nsysgen.cli.folders import _output_dir, run_check, run_regenerate
from nsysgen.errors import EXIT_DRIFT, EXIT_OK
from nsysgen.output.manifest import MANIFEST_NAME
from tests.conftest import RunCli


def test_output_dir_is_generated_unless_given() -> None:
    assert _output_dir(Arguments(verb="check")) == Path("generated")
    given = Arguments(verb="check", overrides=["output_dir=a", "output_dir=b/c"])
    assert _output_dir(given) == Path("b/c")
    with pytest.raises(UsageError) as raised:
        _output_dir(Arguments(verb="regenerate", overrides=["output_dir=a", "job.name=x"]))
    assert str(raised.value) == "regenerate takes only output_dir=DIR, not job.name=x"
    assert raised.value.verb == "regenerate"


def test_an_empty_output_dir_is_current(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_check(Arguments(verb="check", overrides=[f"output_dir={tmp_path}"])) == EXIT_OK
    assert capsys.readouterr().out == f"nsysgen check: 0 folders, 0 files current in {tmp_path}\n"


def test_drift_and_a_folder_that_cannot_compile_exit_1(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli("job.name=a", "output_dir=out").code == 0
    check = Arguments(verb="check", overrides=["output_dir=out"])
    regenerate = Arguments(verb="regenerate", overrides=["output_dir=out"], force=True)
    assert run_check(check) == EXIT_OK
    (tmp_path / "out" / "a" / "recipes.sh").unlink()
    assert run_check(check) == EXIT_DRIFT
    assert run_regenerate(regenerate) == EXIT_OK
    assert run_check(check) == EXIT_OK
    (tmp_path / "out" / "a" / MANIFEST_NAME).write_text("{}")
    assert run_regenerate(regenerate) == EXIT_DRIFT  # --force cannot compile it either
    assert run_check(check) == EXIT_DRIFT
