"""The package's layers, read from the code's imports (every import: module level, inside
functions and for type checking): each layer imports only itself and the layers below it, the
analysis side only itself and the base, the shipped verifier only the standard library, and no
module imports one that imports it back."""

from __future__ import annotations

import ast
import re
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from scripts.layer_rules import ANALYZE, REPO, imports, may_import, modules, rank


def test_each_layer_imports_only_itself_and_below() -> None:
    known = modules()
    wrong = []
    for module, path in known.items():
        layer, inside = rank(module)[0], {n for n in imports(path, known) if n in known}
        for other in inside - {module}:
            other_layer = rank(other)[0]
            if not may_import(layer, other_layer):
                wrong.append(f"{module} ({layer}) imports {other} ({other_layer})")
    assert not wrong


def test_imports_are_absolute() -> None:
    """The graph above reads absolute imports only: a relative one would go unseen."""
    relative = [
        f"{module}: {ast.unparse(node)}"
        for module, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    assert not relative


def test_no_import_cycle_of_any_kind() -> None:
    known = modules()
    graph = {m: {n for n in imports(p, known) if n in known} - {m} for m, p in known.items()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        raise AssertionError(f"import cycle: {error.args[1]}") from None


def test_the_shipped_verifier_imports_only_the_standard_library() -> None:
    """Its modules (the verifier's package and the report-side facts it ships with) import
    the standard library and each other, nothing else."""
    known = modules()
    ours = [m for m in known if rank(m)[0] in ("shipped", "reports")]
    outside = {n for m in ours for n in imports(known[m], known) if n not in known}
    assert outside <= set(sys.stdlib_module_names) | {"__future__"}, outside


def test_nsysgen_is_imported_inside_functions_only_by_the_cli_dispatch() -> None:
    """Function-local imports are for optional heavy packages (matplotlib, distributed) and
    the CLI's per-verb dispatch, never a way around an import cycle."""
    known, local = modules(), []
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    is_import = isinstance(inner, ast.Import | ast.ImportFrom)
                    dispatch = module == "nsysgen.cli" or module.startswith("nsysgen.cli.")
                    if is_import and "nsysgen" in ast.unparse(inner) and not dispatch:
                        local.append(f"{module}: {ast.unparse(inner)}")
    assert not local


def test_one_module_of_the_analysis_opens_an_export() -> None:
    known = modules()
    opening = {
        module
        for module, path in known.items()
        if module.startswith(ANALYZE) and "sqlite3.connect(" in path.read_text(encoding="utf-8")
    }
    assert opening == {"nsysgen.analyze.read.report"}


# The one module of nsysgen/profile/ a target may import: the plan's types (a package). Targets
# render from the plan, which carries every derived fact; deriving one again there is a bug.
PLAN_TYPES = "nsysgen.profile.plan_types"


def _is(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_targets_import_nothing_of_profile_but_the_plan_types() -> None:
    known = modules()
    wrong = [
        f"{module} imports {other}"
        for module, path in known.items()
        if _is(module, "nsysgen.targets")
        for other in imports(path, known)
        if _is(other, "nsysgen.profile") and not _is(other, PLAN_TYPES)
    ]
    assert not wrong


def test_the_plan_types_derive_nothing() -> None:
    """The plan's types import no other module of nsysgen/profile/ (so that what a target may
    import holds no derivation)."""
    known = modules()
    wrong = [
        f"{module} imports {other}"
        for module, path in known.items()
        if _is(module, PLAN_TYPES)
        for other in imports(path, known)
        if _is(other, "nsysgen.profile") and not _is(other, PLAN_TYPES)
    ]
    assert not wrong


# The analysis in stages, bottom to top: read/ (each report), judge/ (the answers), render/
# (what people read), then the orchestration at analyze/'s top. errors.py is below them all.
STAGES = ("errors", "read", "judge", "render")


def test_the_analysis_stages_import_only_downwards() -> None:
    known = modules()

    def stage(module: str) -> int:
        part = module.removeprefix(ANALYZE + ".").split(".")[0]
        return STAGES.index(part) if part in STAGES else len(STAGES)

    wrong = [
        f"{module} imports {other}"
        for module, path in known.items()
        if module.startswith(ANALYZE + ".")
        for other in imports(path, known)
        if other.startswith(ANALYZE + ".") and stage(other) > stage(module)
    ]
    assert not wrong


def test_contributing_walks_a_report_through_every_analysis_module_once() -> None:
    """CONTRIBUTING.md's walk of one report through `nsysgen analyze` names each module of
    nsysgen/analyze/ exactly once: a new module is placed in the walk, a gone one leaves it."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    walk = text[text.index("## One report through") : text.index("## One module, one job")]
    folder = REPO / "nsysgen" / "analyze"
    named = {
        str(p.relative_to(folder)): walk.count(f"`{p.relative_to(folder)}`")
        for p in folder.rglob("*.py")
        if p.name != "__init__.py"
    }
    assert {m: n for m, n in named.items() if n != 1} == {}


def test_the_summary_is_read_by_field_not_by_key() -> None:
    """The analysis's summary is a typed value (nsysgen/analyze/judge/summary_types.py): no
    module reads it back as a dict, by key."""
    spelled = re.compile(r"\bsummary(\.get\(|\[)")
    wrong = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / "nsysgen" / "analyze").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line)
    ]
    assert not wrong


# What `Config.setup` decides (nsysgen/model/setup.py), as code spells it when it derives it again.
REDERIVED = {
    "the launch shape": ('launch == "per_gpu"', 'launch != "per_gpu"', 'launch == "per_node"',
                         'launch != "per_node"'),
    "the step method": ("step_method(config)", 'step_method or "auto"'),
    "the window's defaults": ("first_step or 0", "last_step or 0"),
    "whether CUDA is traced": ('startswith("cuda")', "CUDA_VALUES"),
    "the unit of a task": ('"rank" if',),
}  # fmt: skip
# Where they are decided, and where the raw value is itself checked (it must be a choice of the
# workload's).
DECIDES = {"nsysgen/model/setup.py", "nsysgen/model/__init__.py", "nsysgen/profile/semantic.py"}


def test_the_setup_is_decided_once() -> None:
    """Every module reads the launch, the step method, the window and the CUDA trace from
    `config.setup`: none derives them from the config again."""
    wrong = [
        f"{path.relative_to(REPO)} derives {fact} again ({spelling})"
        for path in sorted((REPO / "nsysgen").rglob("*.py"))
        if str(path.relative_to(REPO)) not in DECIDES
        for fact, spellings in REDERIVED.items()
        for spelling in spellings
        if spelling in path.read_text(encoding="utf-8")
    ]
    assert not wrong


def _reads_first_step(path: Path) -> bool:
    """The module's code reads capture.first_step (or the setup's), or the variable that
    carries it to the helper; a mention in a message or docstring is no reading."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("first_step", "FIRST_STEP"):
            return True
        if isinstance(node, ast.Name) and node.id == "FIRST_STEP":
            return True
        if isinstance(node, ast.Subscript) and ast.unparse(node.slice) == "'first_step'":
            return True
    return False


def test_contributing_walks_capture_first_step_through_every_module_that_reads_it() -> None:
    """CONTRIBUTING.md's walk of `capture.first_step` names every module of the compile and the
    run that reads it, once (the analysis reads the window from the reports' contract)."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    walk = text[text.index("## One value through the compile") : text.index("## One module, one")]
    folder = REPO / "nsysgen"
    readers = {
        str(path.relative_to(folder))
        for path in folder.rglob("*.py")
        if "analyze" not in path.parts and _reads_first_step(path)
    }
    assert {m: walk.count(f"`{m}`") for m in readers if walk.count(f"`{m}`") != 1} == {}
