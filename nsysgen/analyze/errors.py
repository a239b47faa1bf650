"""The analysis's one error: a report folder, an option or a file that it cannot use, said in
one line (exit 2)."""

from __future__ import annotations

from nsysgen.errors import NsysgenError


class AnalyzeError(NsysgenError):
    def user_message(self) -> str:
        return f"error: {self}"
