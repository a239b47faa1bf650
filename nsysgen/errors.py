"""Errors that reach the user, each with the exit code the CLI maps it to."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_INVALID = 2
EXIT_BUG = 3


@dataclass(frozen=True, order=True)
class Issue:
    """One problem with the input, located by its dotted config path."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class NsysgenError(Exception):
    """An error caused by the user's input or environment; printed without a traceback."""

    exit_code = EXIT_INVALID

    def user_message(self) -> str:
        return str(self)


class InvalidConfig(NsysgenError):
    """The composed config breaks the schema or a semantic rule."""

    def __init__(
        self,
        issues: list[Issue],
        choices: dict[str, str] | None = None,
        sources: dict[str, str] | None = None,
    ) -> None:
        self.issues = sorted(set(issues))
        self.choices = choices or {}
        self.sources = sources or {}  # group -> the user's config file that chose its values
        super().__init__(f"{len(self.issues)} problem(s)")

    def user_message(self) -> str:
        count = len(self.issues)
        lines = [f"error: invalid config ({count} problem{'s' if count != 1 else ''})"]
        for issue in self.issues:
            source = self.sources.get(issue.path.split(".")[0].split("[")[0])
            lines.append(f"  {issue}" + (f" [in {source}]" if source else ""))
        if self.choices:
            groups = " ".join(f"{group}={option}" for group, option in sorted(self.choices.items()))
            lines.append(f"  groups: {groups}")
        return "\n".join(lines)


class ComposeError(NsysgenError):
    """Hydra could not compose the config (unknown option, bad override syntax, ...)."""

    def user_message(self) -> str:
        return f"error: {self}"


def close_flags(word: str, flags: Iterable[str]) -> str:
    """' (did you mean --config-dir?)' for a misspelt flag, or ''. Every verb's parser asks
    this, argparse's and nsysgen's own alike; '_' for '-' is the commonest slip, so it is
    tried first."""
    name = word.partition("=")[0]
    known = sorted(flag for flag in flags if flag.startswith("-"))
    dashed = "-" * (len(name) - len(name.lstrip("-"))) + name.lstrip("-").replace("_", "-")
    close = [dashed] if dashed in known else difflib.get_close_matches(name, known, 3, 0.7)
    return f" (did you mean {' or '.join(close)}?)" if close else ""
