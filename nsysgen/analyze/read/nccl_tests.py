"""The result table nccl-tests prints, read from its log (`--nccl-tests-log`): the figures the
program measured itself, set beside the reports' kernel times."""

from __future__ import annotations

import re
from pathlib import Path

from nsysgen.analyze.errors import AnalyzeError

# A line of `srun --label` output starts with its task id: "0: ".
_TASK_LABEL = re.compile(r"^\s*\d+:\s")


def parse_nccl_tests_log(path: Path) -> dict[int, tuple[float, float | None]]:
    """size (bytes) -> (out-of-place time in us, bus bandwidth in GB/s), from the result table
    nccl-tests prints (size count type redop root time algbw busbw #wrong ...), also in a job
    log whose lines carry srun's task labels."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise AnalyzeError(f"--nccl-tests-log {path}: {exc.strerror or exc}") from None
    rows: dict[int, tuple[float, float | None]] = {}
    for line in text.splitlines():
        fields = _TASK_LABEL.sub("", line).split()
        if len(fields) >= 6 and fields[0].isdigit() and fields[1].isdigit():
            try:
                time_us = float(fields[5])
            except ValueError:
                continue
            try:
                busbw: float | None = float(fields[7])
            except (IndexError, ValueError):
                busbw = None
            rows[int(fields[0])] = (time_us, busbw)
    if not rows:
        raise AnalyzeError(
            f"{path}: no nccl-tests result rows (size count type redop root time ...) found"
        )
    return rows
