"""One standard-library file from a package of small modules: how nsysgen ships a program that
runs where nsysgen is not installed (the step helper, the verifier).

The package's `__init__.py` holds the shipped file's docstring and `PARTS`, the names of its
modules in the order they are written out (a dotted name: a standard-library module elsewhere in
nsysgen that the package shares, `nsysgen.reports.contract`). A part imports names of earlier
parts by absolute name (`from nsysgen.shipped.<package>.<part> import X`, as the layer test
reads imports), the standard library at the top, and typing names inside `if TYPE_CHECKING:`.
The file is: the docstring, `from __future__ import annotations`, every part's standard-library
imports (once, sorted as ruff sorts them), one TYPE_CHECKING block holding every part's typing
imports, then each part's code after its imports, in PARTS order. Same parts, same bytes.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

SHIPPED = Path(__file__).parent
LINE_LENGTH = 100  # the project's (pyproject.toml): a longer import is wrapped as ruff does
TYPE_CHECKING_LINE = (
    "TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process"
)


class AssembleError(Exception):
    """A part that cannot go into one standard-library file as it is written."""


@dataclass
class _Header:
    """What the parts import, merged: `import x` names and `from x import` names per module."""

    modules: set[str] = field(default_factory=set)
    names: dict[str, set[str]] = field(default_factory=dict)

    def add(self, node: ast.Import | ast.ImportFrom, where: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                _stdlib(alias.name, where)
                if alias.asname:
                    raise AssembleError(f"{where}: `import ... as` is not assembled")
                self.modules.add(alias.name)
            return
        module = node.module or ""
        _stdlib(module, where)
        for alias in node.names:
            if alias.asname:
                raise AssembleError(f"{where}: `from ... import ... as` is not assembled")
            self.names.setdefault(module, set()).add(alias.name)

    def lines(self, indent: str = "") -> list[str]:
        out = [f"{indent}import {m}" for m in sorted(self.modules)]
        for module in sorted(self.names):
            names = sorted(self.names[module], key=_isort_key)
            line = f"{indent}from {module} import {', '.join(names)}"
            if len(line) > LINE_LENGTH:
                inner = "".join(f"{indent}    {name},\n" for name in names)
                line = f"{indent}from {module} import (\n{inner}{indent})"
            out.append(line)
        return out

    def __bool__(self) -> bool:
        return bool(self.modules or self.names)


def _isort_key(name: str) -> tuple[int, str]:
    # As ruff's isort orders names: CONSTANTS, then Classes, then functions.
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def _stdlib(module: str, where: str) -> None:
    if module.partition(".")[0] not in sys.stdlib_module_names:
        raise AssembleError(f"{where}: imports {module}, which is not in the standard library")


def parts(package: str, root: Path = SHIPPED) -> list[tuple[str, Path]]:
    """The parts of `nsysgen/shipped/<package>/` in the order its PARTS names them, each as its
    module name and file. A name with a dot is a module elsewhere in nsysgen that the package
    shares (`nsysgen.reports.contract`), else a module of the package."""
    init = root / package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["PARTS"]:
            names: tuple[str, ...] = ast.literal_eval(node.value)
            return [_part(package, name, root) for name in names]
    raise AssembleError(f"{init}: no PARTS")


def _part(package: str, name: str, root: Path) -> tuple[str, Path]:
    if "." in name:
        return name, root.parent.parent.joinpath(*name.split(".")).with_suffix(".py")
    return f"nsysgen.shipped.{package}.{name}", root / package / f"{name}.py"


def assemble(package: str, root: Path = SHIPPED) -> str:
    """The one file that `nsysgen/shipped/<package>/` ships as."""
    init = root / package / "__init__.py"
    docstring = _docstring_text(init.read_text(encoding="utf-8"), init)
    runtime, typing = _Header(), _Header()
    bodies: list[str] = []
    defined: dict[str, str] = {}  # top-level name: the part (module) that defines it
    for module, path in parts(package, root):
        where = module.replace(".", "/") + ".py"
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        body_start = _read_header(tree, where, defined, runtime, typing)
        for name in _top_names(tree):
            if name in defined:
                raise AssembleError(f"{where}: {name} is also defined in {defined[name]}")
            defined[name] = module
        lines = source.splitlines()[body_start:]
        bodies.append("\n".join(lines).strip("\n"))
    head = [docstring, "", "from __future__ import annotations", ""]
    if runtime:
        head += [*runtime.lines(), ""]
    if typing:
        head += [TYPE_CHECKING_LINE, "if TYPE_CHECKING:", *typing.lines("    "), ""]
    text = "\n".join(head) + "\n" + "\n\n\n".join(b for b in bodies if b) + "\n"
    compile(text, f"nsysgen/shipped/{package} (assembled)", "exec")  # a SyntaxError names it
    return text


def _docstring_text(source: str, path: Path) -> str:
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        raise AssembleError(f"{path}: the shipped file's docstring comes first")
    assert first.end_lineno is not None
    return "\n".join(source.splitlines()[first.lineno - 1 : first.end_lineno])


def _read_header(
    tree: ast.Module,
    where: str,
    defined: dict[str, str],
    runtime: _Header,
    typing: _Header,
) -> int:
    """Merge the part's imports into the file's; returns the line index where its code begins."""
    end = 0
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if docstring or future or _is_type_checking_flag(node):
            pass  # the file has its own docstring, one __future__ import and one flag
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if not _sibling(node, where, defined):
                runtime.add(node, where)
        elif isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for inner in node.body:
                if not isinstance(inner, ast.Import | ast.ImportFrom):
                    raise AssembleError(f"{where}: only imports go under TYPE_CHECKING")
                if not _sibling(inner, where, defined):
                    typing.add(inner, where)
        else:
            break
        assert node.end_lineno is not None
        end = node.end_lineno
    return end


def _sibling(node: ast.Import | ast.ImportFrom, where: str, defined: dict[str, str]) -> bool:
    """An import of an earlier part (left out: the name is defined above it in the file)."""
    if isinstance(node, ast.Import):
        if any(a.name.partition(".")[0] == "nsysgen" for a in node.names):
            raise AssembleError(f"{where}: import names from earlier parts (`from ... import`)")
        return False
    module = node.module or ""
    if module.partition(".")[0] != "nsysgen":
        return False
    if module not in defined.values():
        raise AssembleError(f"{where}: imports {module}, which is not an earlier part")
    for alias in node.names:
        if defined.get(alias.name) != module:
            raise AssembleError(f"{where}: imports {alias.name}, which {module} does not define")
    return True


def _is_type_checking_flag(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and ast.unparse(node) == "TYPE_CHECKING = False"


def _top_names(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if n != "TYPE_CHECKING"]
