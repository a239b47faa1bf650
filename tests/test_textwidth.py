"""Text for a terminal (nsysgen/textwidth.py): the width taken from COLUMNS or a pipe, empty and
over-long text wrapped, and commands broken with backslashes (and quoted pieces of one word)
exactly where the room ends. tests/cli/test_help_width.py reads such commands back in bash."""

from __future__ import annotations

import io

import pytest

from nsysgen.textwidth import MIN_WIDTH, PIPE_WIDTH, output_width, shell_lines, wrap


def test_output_width_is_columns_at_least_the_minimum_else_the_pipe_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdout", io.StringIO())  # a pipe, not a terminal
    monkeypatch.setenv("COLUMNS", "132")
    assert output_width() == 132
    monkeypatch.setenv("COLUMNS", "12")
    assert output_width() == MIN_WIDTH == 40
    monkeypatch.setenv("COLUMNS", "wide")  # not a number: ignored
    assert output_width() == PIPE_WIDTH == 100
    monkeypatch.delenv("COLUMNS")
    assert output_width() == PIPE_WIDTH


def test_wrap_of_nothing_is_the_label_alone_and_a_long_word_is_cut() -> None:
    assert wrap("", 20, "label: ", "  ") == ["label:"]
    assert wrap("a /very/long/path/that/does/not/fit", 12) == [
        "a /very/long",
        "/path/that/d",
        "oes/not/fit",
    ]


def test_a_short_command_is_one_line_and_quotes_what_the_shell_would_split() -> None:
    assert shell_lines(["nsys", "profile", "-o", "x y"], 80) == ["  nsys profile -o 'x y'"]
    assert shell_lines(["echo", "it's"], 80) == ["  echo 'it'\"'\"'s'"]


def test_words_go_on_the_next_line_after_a_backslash_with_the_rest_indent() -> None:
    assert shell_lines(list("abcdefgh"), 12, "> ", "+ ") == ["> a b c d \\", "+ e f g h"]


def test_a_word_longer_than_the_line_is_split_into_quoted_pieces_at_the_line_start() -> None:
    lines = shell_lines(["nsys", "abcdefghijklmnopqrstuvwxyz"], 20)
    assert lines == ["  nsys \\", "      'abcdefghi'\\", "'jklmnopqr'\\", "'stuvwxyz'"]
    assert all(len(line) <= 20 for line in lines)
