"""The analysis's one error (nsysgen/analyze/errors.py): said in one line, as `error: ...`,
with the CLI's input-error exit (2), and raised from every stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read import nccl_tests
from nsysgen.errors import NsysgenError


def test_one_line_and_an_input_error() -> None:
    error = AnalyzeError("reports/: no .nsys-rep or .sqlite reports")
    assert isinstance(error, NsysgenError)
    assert error.user_message() == "error: reports/: no .nsys-rep or .sqlite reports"
    with pytest.raises(AnalyzeError, match="^--nccl-tests-log"):  # the readers raise this one
        nccl_tests.parse_nccl_tests_log(Path("/nonexistent/log"))
