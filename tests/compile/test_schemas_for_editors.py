"""The schemas as editors use them: on config files as written, before Hydra composes them.

An editor (yaml-language-server) checks one file against one group schema, with Hydra's
`defaults` list still in it and `${...}` references unresolved; nsysgen checks the composed,
resolved config. The packaged files must pass the first way too.

Editors get schemas/editor/<name>.schema.json, which nsysgen.config.editor_schemas derives from
the validation schemas (every value that may be a reference also accepts one) and which are
committed: `pytest --update-golden` rewrites them. The validation schemas themselves get no
interpolation branch: a resolved value can still hold a literal `${a.b}` (OmegaConf turns an
escaped `\\${a.b}` into one), so such a branch would let e.g. a relative `capture.report_dir`
through.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from nsysgen.config.editor_schemas import (
    EDITOR_DIR,
    NAMES,
    editor_schema_texts,
    write_editor_schemas,
)
from nsysgen.config.validate import schema_issues
from tests.conftest import REPO, RunCli

SCHEMAS = REPO / "schemas"
EDITOR = SCHEMAS / EDITOR_DIR
CONF = REPO / "conf"
GROUPS = ("cluster", "capture", "workload", "target", "nsight")
OWN_SCHEMAS = (*GROUPS, "config")
USER_CONFIG = REPO / "tests" / "data" / "user-conf" / "cluster" / "mycluster.yaml"
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")
UPDATE = "run `pytest --update-golden tests/compile/test_schemas_for_editors.py` and review"
# Words a numeric key's description names its unit with.
UNITS = re.compile(r"\b(seconds|minutes|bytes|bits|count|port number|line number|factor)\b")

Schema = dict[str, Any]


def load_schema(name: str, folder: Path = SCHEMAS) -> Schema:
    data = json.loads((folder / f"{name}.schema.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def as_written(path: Path) -> tuple[Schema, list[Any]]:
    """A config file as an editor sees it, without Hydra's `defaults` list (returned apart)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    defaults = data.pop("defaults", [])
    assert isinstance(defaults, list)
    return data, defaults


def overlay(node: Any) -> Any:
    """`node` with no required keys, for files that set a few keys over other files.

    An `if` then needs its keys present, or an absent `target.name` would match both targets'
    branches (an `if` on an absent property holds).
    """
    if isinstance(node, list):
        return [overlay(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: overlay(value) for key, value in node.items() if key != "required"}
    if isinstance(node.get("if"), dict):
        condition = dict(node["if"])
        condition["required"] = sorted(condition.get("properties", {}))
        out["if"] = condition
    return out


def validator(name: str, *, overlays: bool = False) -> Draft202012Validator:
    """The shipped editor schema `name`, its $refs resolved among the editor schemas only."""

    def derive(schema: Schema) -> Schema:
        return overlay(schema) if overlays else schema

    registry: Registry[Any] = Registry().with_resources(
        (schema["$id"], Resource.from_contents(derive(schema), DRAFT202012))
        for schema in (load_schema(n, EDITOR) for n in OWN_SCHEMAS)
    )
    return Draft202012Validator(derive(load_schema(name, EDITOR)), registry=registry)


def problems(validator: Draft202012Validator, data: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


def test_the_editor_schemas_are_current(request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--update-golden"):
        write_editor_schemas(SCHEMAS)
    expected = editor_schema_texts(SCHEMAS)
    shipped = {p.name: p.read_text(encoding="utf-8") for p in sorted(EDITOR.glob("*"))}
    stale = sorted(n for n in {*expected, *shipped} if expected.get(n) != shipped.get(n))
    assert stale == [], f"schemas/{EDITOR_DIR}/ is stale ({', '.join(stale)}): {UPDATE}"
    assert set(NAMES) == set(OWN_SCHEMAS)


@pytest.mark.parametrize("name", OWN_SCHEMAS)
def test_every_editor_schema_refers_only_to_editor_schemas(name: str) -> None:
    """An editor reads $refs as files next to the schema: each must be an editor copy."""
    schema = load_schema(name, EDITOR)
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"https://nsysgen.dev/schemas/{EDITOR_DIR}/{name}.schema.json"
    for ref in re.findall(r'"\$ref": "([^"#]+)', json.dumps(schema)):
        assert (EDITOR / ref).is_file(), f"{name}: $ref {ref} is no file in schemas/{EDITOR_DIR}/"


@pytest.mark.parametrize(
    "path", sorted(p for g in GROUPS for p in (CONF / g).glob("*.yaml")), ids=lambda p: p.stem
)
def test_every_packaged_group_file_validates_as_written(path: Path) -> None:
    data, defaults = as_written(path)
    assert not defaults, f"{path}: a group file with a defaults list needs an overlay schema"
    assert not path.read_text().startswith("# @package"), "group files use their group's package"
    assert problems(validator(path.parent.name), data) == []


@pytest.mark.parametrize(
    "path",
    [CONF / "config.yaml", *sorted((CONF / "experiment").glob("*.yaml"))],
    ids=lambda p: p.stem,
)
def test_primary_config_and_experiments_validate_as_overlays(path: Path) -> None:
    data, defaults = as_written(path)
    if path.parent.name == "experiment":
        assert path.read_text().startswith("# @package _global_\n")
        data = with_chosen_discriminators(data, defaults)
    assert data, f"{path} sets nothing"
    assert problems(validator("config", overlays=True), data) == []


def with_chosen_discriminators(data: Schema, defaults: list[Any]) -> Schema:
    """`data` with the keys that select if/then branches (target.name, capture.mode, ...) taken
    from the options the experiment picks, so that its keys are checked against that branch."""
    out = copy.deepcopy(data)
    for entry in defaults:
        assert isinstance(entry, dict) and len(entry) == 1, entry
        [(key, option)] = entry.items()
        group = str(key).removeprefix("override /")
        if group not in out:
            continue
        chosen, _ = as_written(CONF / group / f"{option}.yaml")
        for branch in load_schema(group, EDITOR).get("allOf", []):
            for discriminator in branch["if"]["properties"]:
                out[group].setdefault(discriminator, chosen[discriminator])
    return out


def test_references_are_accepted_where_the_composed_config_takes_them() -> None:
    capture, cluster = validator("capture"), validator("cluster")
    window, _ = as_written(CONF / "capture" / "window.yaml")
    p5, _ = as_written(CONF / "cluster" / "p5.yaml")
    # Text holding references where a string pattern (here an absolute path) is.
    assert problems(capture, {**window, "report_dir": "${cluster.shared_fs}/reports"}) == []
    assert problems(cluster, {**p5, "nsight_root": "${cluster.shared_fs}/nsight"}) == []
    # One whole reference where a number, a boolean or a choice is: OmegaConf keeps its type.
    for key in ("delay", "efa_metrics", "sample"):
        assert problems(capture, {**window, key: "${capture.other}"}) == [], key
    assert problems(cluster, {**p5, "nodes": "${cluster.gpus_per_node}"}) == []


def test_the_editor_schemas_still_check_something() -> None:
    """The packaged files pass because of what they hold, not because the schemas are lax."""
    capture, cluster = validator("capture"), validator("cluster")
    window, _ = as_written(CONF / "capture" / "window.yaml")
    for bad in ("$(id)${job.name}", "${cluster.shared_fs} /reports", "${oc.env:HOME}", "a${b}'"):
        assert problems(capture, {**window, "report_dir": bad}), bad
    assert problems(capture, {**window, "report_dir": "nsight-reports/run"})  # relative
    assert problems(capture, {**window, "report_dir": 5})  # a number for a path
    # A reference with text around it resolves to text: refused where a number is.
    assert problems(capture, {**window, "delay": "${capture.duration}s"})
    assert problems(capture, {**window, "delay": "soon"})
    assert problems(capture, {**window, "efa_metrics": "yes"})
    p5, _ = as_written(CONF / "cluster" / "p5.yaml")
    assert problems(cluster, {**p5, "nodes": 0})
    assert problems(cluster, {**p5, "nodes": "${cluster.gpus_per_node} * 2"})
    # An experiment's keys are checked against the branch of the option it picks.
    experiment, defaults = as_written(CONF / "experiment" / "fsdp-p4de-eks.yaml")
    experiment["target"]["exclusive"] = True  # a Slurm key
    found = problems(
        validator("config", overlays=True), with_chosen_discriminators(experiment, defaults)
    )
    assert any("exclusive" in line for line in found), found


def test_the_shipped_schemas_refuse_references_in_resolved_configs() -> None:
    """What nsysgen validates after resolving: a literal `${...}` left in a value (an escaped
    reference) gets no interpolation branch."""
    window, _ = as_written(CONF / "capture" / "window.yaml")
    window["report_dir"] = "${cluster.shared_fs}/nsight-reports"
    refused = [i for i in schema_issues({"capture": window}) if i.path == "capture.report_dir"]
    assert len(refused) == 1 and "is not allowed" in refused[0].message, refused


def properties(node: Any, path: str) -> Iterator[tuple[str, Schema]]:
    """(dotted path, schema) of every property, including those only if/then branches add."""
    if not isinstance(node, dict):
        return
    declared = node.get("properties", {})
    for key, sub in declared.items():
        if isinstance(sub, dict):
            yield f"{path}.{key}", sub
            yield from properties(sub, f"{path}.{key}")
    for branch in node.get("allOf", []):
        for key, sub in branch.get("then", {}).get("properties", {}).items():
            # `name: true` and restated keys (fsdp's launch) are described where declared.
            if isinstance(sub, dict) and key not in declared:
                yield f"{path}.{key}", sub
                yield from properties(sub, f"{path}.{key}")


@pytest.mark.parametrize("name", OWN_SCHEMAS)
def test_every_property_has_a_one_line_description_with_units(name: str) -> None:
    found = list(properties(load_schema(name), name))
    assert len(found) > 5
    for path, schema in found:
        description = schema.get("description")
        assert isinstance(description, str) and description.strip(), f"{path}: no description"
        assert "\n" not in description and len(description) <= 120, f"{path}: not one line"
        types = schema.get("type", [])
        numeric = {"integer", "number"} & set(types if isinstance(types, list) else [types])
        if numeric:
            assert UNITS.search(description), f"{path}: no unit in {description!r}"
    # Editors show the description of a key whose value may be a reference, too.
    described = dict(properties(load_schema(name, EDITOR), name))
    assert {path: s["description"] for path, s in found} == {
        path: described[path].get("description") for path, _ in found
    }


@pytest.mark.parametrize("name", OWN_SCHEMAS)
def test_schema_ids_are_stable(name: str) -> None:
    assert load_schema(name)["$id"] == f"https://nsysgen.dev/schemas/{name}.schema.json"


def modelines() -> Iterator[tuple[Path, str]]:
    """(file, schema path) of every YAML file in conf/ and tests/data/ with a modeline."""
    for folder in (CONF, REPO / "tests" / "data"):
        for path in sorted(folder.rglob("*.yaml")):
            for line in path.read_text(encoding="utf-8").splitlines():
                match = MODELINE.match(line)
                if match:
                    yield path, match.group(1)


def test_every_modeline_points_at_its_groups_editor_schema() -> None:
    found = list(modelines())
    assert USER_CONFIG in [path for path, _ in found]
    # Every packaged group file carries one, so that editors check nsysgen's own files too.
    group_files = {p for group in GROUPS for p in (CONF / group).glob("*.yaml")}
    assert group_files <= {path for path, _ in found}
    for path, schema in found:
        # yaml-language-server resolves a relative $schema against the file's own folder. Only
        # group files have a schema as written (config.yaml and experiments set a few keys
        # over other files, with a defaults list).
        assert (path.parent / schema).resolve() == EDITOR / f"{path.parent.name}.schema.json", path


def test_an_example_user_config_validates_through_its_modeline() -> None:
    first = USER_CONFIG.read_text(encoding="utf-8").splitlines()[0]
    match = MODELINE.match(first)
    assert match, first
    schema_path = (USER_CONFIG.parent / match.group(1)).resolve()
    assert schema_path == (EDITOR / "cluster.schema.json").resolve()
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    data, defaults = as_written(USER_CONFIG)
    assert not defaults
    # The schema file itself, no registry: this is what the editor checks.
    assert problems(Draft202012Validator(schema), data) == []
    # A value copied from a packaged file, as users do (the issue editors flagged).
    copied = {**data, "nsight_root": "${cluster.shared_fs}/nsight-systems/${nsight.version}"}
    assert problems(Draft202012Validator(schema), copied) == []
    assert problems(Draft202012Validator(schema), {**data, "nodes": 0})  # and it can fail


def test_readme_shows_the_modeline_the_example_uses() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- editor-modeline -->\n```yaml\n(.+?)\n```", readme)
    assert block, "README.md has no ```yaml block after <!-- editor-modeline -->"
    match = MODELINE.match(block.group(1))
    assert match
    # The README's file is my-conf/cluster/mycluster.yaml, next to a checkout's schemas/.
    assert match.group(1) == f"../../schemas/{EDITOR_DIR}/cluster.schema.json"
    assert "import nsysgen.resources as r; print(r.SCHEMAS_DIR)" in readme
    assert str(USER_CONFIG.relative_to(REPO)) in readme


def test_the_example_user_config_compiles(run_cli: RunCli) -> None:
    result = run_cli("plan", "--config-dir", str(USER_CONFIG.parent.parent), "cluster=mycluster")
    assert result.code == 0, result.err
    assert "4 x p5.48xlarge" in result.out
