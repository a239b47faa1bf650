"""Files as published (nsysgen/patching/source.py): a byte order mark, CRLF endings, tabs and a
missing final newline survive a patch, and the diff says so the way `git apply` reads it."""

from __future__ import annotations

from nsysgen.patching.source import BOM, NO_NEWLINE, SourceFile, split_lines, unified_diff


def test_lines_keep_their_endings_and_a_form_feed_stays_inside_its_line() -> None:
    assert split_lines("a\r\nb\x0cc\nlast") == ["a\r\n", "b\x0cc\n", "last"]


def test_a_published_file_keeps_its_mark_endings_and_indentation() -> None:
    text = BOM + "for x in y:\r\n\tpass\r\nend()"
    source = SourceFile.of(text)
    assert (source.bom, source.newline, source.code) == (BOM, "\r\n", text[1:])
    assert source.indent_of(2) == "\t"
    patched = source.render({1: ["\tnew()"], 3: ["after()"]})
    assert patched == BOM + "for x in y:\r\n\tnew()\r\n\tpass\r\nend()\r\nafter()"
    assert SourceFile.of(text).render({}) == text


def test_a_missing_final_newline_is_marked_in_the_diff() -> None:
    diff = unified_diff("train.py", "a\nb", "a\nc")
    assert diff.startswith("--- a/train.py\n+++ b/train.py\n")
    assert diff.count(NO_NEWLINE) == 2
    created = unified_diff("new.py", "", "x\n", created=True)
    assert created.startswith("--- /dev/null\n+++ b/new.py\n")
