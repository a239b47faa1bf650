"""Small readings of Python syntax (nsysgen/patching/syntax.py)."""

from __future__ import annotations

import ast

import pytest

from nsysgen.patching.syntax import direct_calls, last_name, names_in, parameters, root_name


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def test_direct_calls_do_not_look_into_nested_functions_or_lambdas() -> None:
    tree = ast.parse("f(g(1))\ndef inner():\n    h()\nk = lambda: m()\n")
    assert sorted(ast.unparse(c.func) for c in direct_calls(tree)) == ["f", "g"]


@pytest.mark.parametrize(
    ("text", "last", "root"),
    [("self.optimizer", "optimizer", "self"), ("opts[0]", "opts", "opts"),
     ("transformers.trainer.Trainer", "Trainer", "transformers"), ("make()()", "make", "make")],
)  # fmt: skip
def test_names(text: str, last: str, root: str) -> None:
    assert (last_name(expr(text)), root_name(expr(text))) == (last, root)


def test_parameters_and_names_read() -> None:
    function = ast.parse("def f(a, /, b, *c, d, **e): pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    assert parameters(function)[:2] == ["a", "b"]
    assert names_in(expr("x + y.z * w(v)")) >= {"x", "y", "w", "v"}


def test_a_script_with_an_invalid_escape_is_parsed_under_warnings_as_errors() -> None:
    """`"\\e"` is valid Python that warns at compile time; the tests run with warnings as errors,
    as a user's `python -W error` does: the script is still read."""
    import warnings

    from nsysgen.patching.syntax import parse

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree = parse('pattern = "\\e[0m"\n')
    assert len(tree.body) == 1
