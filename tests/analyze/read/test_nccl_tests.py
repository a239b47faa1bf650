"""The result table of nccl-tests read from its log (nsysgen/analyze/read/nccl_tests.py), as the
program prints it and as a job's log holds it, srun's task label before every line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.nccl_tests import parse_nccl_tests_log
from tests.analyze.test_analyze import NCCL_TESTS_LOG

ROWS = {1024: (14.2, 0.07), 134217728: (470.1, 285.51)}


def test_the_table_is_read_as_printed_and_from_a_labelled_job_log(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text(NCCL_TESTS_LOG)
    assert parse_nccl_tests_log(log) == ROWS
    log.write_text("".join(f"0: {line}\n" for line in NCCL_TESTS_LOG.splitlines()))
    assert parse_nccl_tests_log(log) == ROWS


def test_a_log_without_the_table_or_no_log_is_an_input_error(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("nothing here\n")
    with pytest.raises(AnalyzeError, match="no nccl-tests result rows"):
        parse_nccl_tests_log(log)
    with pytest.raises(AnalyzeError, match="--nccl-tests-log"):
        parse_nccl_tests_log(tmp_path / "absent")
