"""Hostile values in every user-settable string field: an executed proof (issue 12, item 2).

For each string field of the composed config (leaves, list items, map keys, and nullable string
fields of the schemas) and each hostile value, nsysgen is run in-process the two ways a value
reaches it: a Hydra override on the command line, and a YAML file in a `--config-dir` tree (the
realistic path: a config someone else wrote). Each compile must either

- exit 2 with an error naming the field's config path, writing nothing, or
- exit 0, and then every generated shell script runs under real bash with stand-ins for the
  cluster tools first on PATH (tests/hostile/standin records each call's argv NUL-separated and
  its environment). The outcome is compared with a *baseline* compile of the same field holding a
  benign value: once the hostile value is replaced by the benign one, every recorded call, every
  script's exit status, every #SBATCH directive sbatch would read, every YAML document and the
  Python helper's syntax tree must be identical. That is "the value arrives as one intact argument
  (or intact inside one) and changes nothing else", checked for every call, not only those the
  test author thought of. No marker file may appear, `bash -n` must pass, YAML must parse, the
  Python helper must compile, and the caller's environment must not leak into any file.

The whole matrix is marked slow; a representative subset runs in the default tier.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import json
import os
import py_compile
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser

from nsysgen.cli import main
from nsysgen.config.compose import Composer

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "hostile" / "standin"
SCHEMAS = REPO / "schemas"
# Every external command a generated script may call; each is the stand-in on PATH.
TOOLS = (
    *("srun", "sbatch", "scontrol", "squeue", "sacct", "nsys", "helm", "kubectl", "curl", "wget"),
    *("dpkg", "dpkg-deb", "apt-get", "python3", "aws", "tar", "torchrun", "enroot"),
    # The Nsight Operator 26.x scripts: its CLI (run as `python3 nsight_operator.py`), and the
    # waits of capture-window.sh.
    *("nsight_operator.py", "sleep"),
)
# Scripts in the order an operator runs them; any other executable output is run afterwards.
SCRIPT_ORDER = (
    "install-nsight.sh",
    "storage-secret.sh",
    "install-injector.sh",
    "label-namespace.sh",
    "job.sbatch",
    "capture-window.sh",
    "fetch-reports.sh",
    "recipes.sh",
    "upload-reports.sh",
    "upgrade-injector.sh",
    "uninstall-injector.sh",
)
SCRIPT_TIMEOUT_S = 30
# The caller's HOME during compiles: a value found in no generated file unless `${oc.env:HOME}`
# was resolved into it.
CANARY = "hvcanary7f3a"
MARK = "PWNED"


@dataclass(frozen=True)
class Scenario:
    """Group choices that reach every template family (workloads, targets, install methods).

    `settings` are values the scenario sets besides its groups (dotted path, value), written
    where a user would write them: in the `--config-dir` experiment, or as overrides before the
    case's own. `fields`: when set, only these fields are tested in this scenario, and they are
    tested here even when another scenario of the same target tests them too (a scenario that
    reaches templates the others do not, at a fraction of the cost of every field).
    """

    name: str
    groups: tuple[str, ...]
    experiment: str | None = None
    settings: tuple[tuple[str, Any], ...] = ()
    fields: frozenset[str] | None = None


SCENARIOS = (
    # pyxis container flags, per-GPU tasks, window capture
    Scenario("slurm-nccl", ("target=slurm", "workload=nccl", "capture=window", "cluster=p4de")),
    # per-node torchrun, steps capture (nsysgen_window.py), nsys 2024.4.1 .deb install
    Scenario(
        "slurm-fsdp",
        ("target=slurm", "workload=fsdp", "capture=steps", "cluster=p4de", "nsight=2024.4.1"),
    ),
    # nemo-overrides.txt, nvtx capture, nsys 2023.4.4 (importer link, created directories)
    Scenario(
        "slurm-nemo",
        ("target=slurm", "workload=nemo", "capture=nvtx", "cluster=p5", "nsight=2023.4.4"),
    ),
    Scenario("slurm-python", ("target=slurm", "workload=python", "capture=window")),
    Scenario("eks", (), experiment="fsdp-p4de-eks"),
    # The Nsight Operator 26.x (Coordinator Mode: capture-window.sh; install, upgrade and
    # uninstall scripts; fetch-reports.sh through the operator's CLI) with both job kinds: a
    # TrainJob with reports to S3 (storage-secret.sh, upload-reports.sh) and the 26.3
    # NsightOperatorProfileConfig, and a PyTorchJob with the in-cluster MinIO and flat values.
    Scenario(
        "eks-26-trainjob",
        ("target=eks", "workload=fsdp", "capture=window", "cluster=p5", "nsight=2025.3.1"),
        settings=(
            ("target.job", "trainjob"),
            ("target.injector", "operator-26"),
            ("target.profile_config", "resource"),
            ("workload.container_image", "registry.example/fsdp:1"),
            ("capture.s3_uri", "s3://hv-bucket/fsdp/run1"),
            ("capture.delay", 5),
            ("capture.duration", 10),
        ),
        fields=frozenset(
            {
                *("job.name", "target.namespace", "target.operator_namespace", "target.release"),
                *("target.charts.operator-26", "target.storage_secret", "target.profile_config"),
                *("target.coordinator", "target.runtime", "target.runtime_kind"),
                *("capture.s3_uri", "capture.report_dir", "capture.extra_args[0]"),
                *("target.injection_match", "workload.container_image"),
            }
        ),
    ),
    Scenario(
        "eks-26-pytorchjob",
        ("target=eks", "workload=fsdp", "capture=window", "cluster=p4de", "nsight=2024.4.1"),
        settings=(
            ("target.job", "pytorchjob"),
            ("target.injector", "operator-26"),
            ("workload.container_image", "registry.example/fsdp:1"),
            ("capture.delay", 5),
            ("capture.duration", 10),
        ),
        fields=frozenset(
            {
                *("job.name", "target.namespace", "target.operator_namespace", "target.release"),
                *("target.charts.operator-26", "capture.report_dir", "target.injection_match"),
            }
        ),
    ),
)
SCENARIO_BY_NAME = {s.name: s for s in SCENARIOS}

Part = str | int


@dataclass(frozen=True)
class Field:
    """One user-settable string: a leaf, an item of a string list, or a key of a map."""

    scenario: str
    parts: tuple[Part, ...]  # config path; an int part is a list index
    kind: str  # "value" | "item" | "key"

    @property
    def dotted(self) -> str:
        text = ".".join(str(p) for p in self.parts if isinstance(p, str))
        index = [p for p in self.parts if isinstance(p, int)]
        return text + (f"[{index[0]}]" if index else "") + (".<key>" if self.kind == "key" else "")

    @property
    def error_path(self) -> str:
        """What an error for this field must name: the path up to the list or map."""
        return ".".join(str(p) for p in self.parts if isinstance(p, str))


@dataclass(frozen=True)
class Hostile:
    label: str
    template: str  # {mark} is the marker path; {base} the field's benign value
    resolves: bool = False  # an interpolation: compared for leaks, not for round trips


HOSTILE = (
    Hostile("space", "{base} hv x"),
    Hostile("squote", "{base}'hv"),
    Hostile("dquote", '{base}"hv'),
    Hostile("squote-break", "{base}'; touch {mark}.sq; '"),
    Hostile("dquote-break", '{base}"; touch {mark}.dq; "'),
    Hostile("cmdsubst", "{base}$(touch {mark}.cs)"),
    Hostile("cmdsubst-rel", "$(touch PWNED.rel){base}"),
    Hostile("backtick", "{base}`touch {mark}.bt`"),
    Hostile("semicolon", "{base};touch {mark}.sc"),
    Hostile("newline", "{base}\ntouch {mark}.nl"),
    Hostile("cr", "{base}\rtouch {mark}.cr"),
    Hostile("nul", "{base}\x00hv"),
    Hostile("tab", "{base}\thv"),
    Hostile("dash", "--hv-dash={base}"),
    Hostile("glob", "{base}*"),
    Hostile("dotdot", "{base}/../hvdd"),
    Hostile("unicode", "{base}é\u2028hv\u202e"),
    Hostile("backslash", "{base}\\hv\\"),
    Hostile("nsys-percent", "{base}%q{{X}}"),
    Hostile("oc-env", "{base}${{oc.env:HOME}}", resolves=True),
)


# ---------------------------------------------------------------------------------------------
# Field enumeration: composed configs plus the schemas (for maps and fields that default to null)


def _schema_paths(
    node: Any, prefix: tuple[str, ...], defs: dict[str, Any], strings: set[Any], maps: set[Any]
) -> None:
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        _schema_paths(defs[ref.rsplit("/", 1)[1]], prefix, defs, strings, maps)
    types = node.get("type")
    type_list = types if isinstance(types, list) else [types]
    if "string" in type_list or ("pattern" in node and types is None):
        strings.add(prefix)
    for key, sub in node.get("properties", {}).items():
        _schema_paths(sub, (*prefix, key), defs, strings, maps)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        maps.add(prefix)
    items = node.get("items")
    if isinstance(items, dict):
        _schema_paths(items, (*prefix, "[]"), defs, strings, maps)
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key, []):
            _schema_paths(sub, prefix, defs, strings, maps)
    for key in ("then", "else"):
        _schema_paths(node.get(key), prefix, defs, strings, maps)


def schema_string_and_map_paths() -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    strings: set[tuple[str, ...]] = set()
    maps: set[tuple[str, ...]] = set()
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        if path.name.startswith("helm-"):
            continue  # describe the charts' values, not nsysgen's config
        schema = json.loads(path.read_text())
        group = path.name.split(".")[0]
        prefix: tuple[str, ...] = () if group == "config" else (group,)
        _schema_paths(schema, prefix, schema.get("$defs", {}), strings, maps)
    return strings, maps


def _get(data: Any, parts: tuple[Part, ...]) -> Any:
    for part in parts:
        data = data[part]
    return data


def enumerate_fields() -> list[Field]:  # noqa: C901 - one walk, many node kinds
    """Every string field of every scenario; a path shared by several scenarios is tested once
    per target (the templates differ by target, not by the scenario that reached them)."""
    composer = Composer()
    schema_strings, schema_maps = schema_string_and_map_paths()
    fields: list[Field] = []
    seen: set[tuple[str, tuple[Part, ...], str]] = set()

    def add(scenario: Scenario, target: str, parts: tuple[Part, ...], kind: str) -> None:
        field = Field(scenario.name, parts, kind)
        if scenario.fields is not None and field.dotted not in scenario.fields:
            return
        family = target if scenario.fields is None else scenario.name
        key = (family, tuple(p if isinstance(p, str) else 0 for p in parts), kind)
        if key not in seen:
            seen.add(key)
            fields.append(field)

    for scenario in SCENARIOS:
        data = composer.compose(scenario_overrides(scenario, Path("/fsx"))).data
        target = str(data["target"]["name"])

        def walk(node: Any, parts: tuple[Part, ...], scenario: Scenario, target: str) -> None:
            if isinstance(node, dict):
                if tuple(p for p in parts if isinstance(p, str)) in schema_maps:
                    add(scenario, target, parts, "key")
                    if not node:  # an empty map: a new entry's value is a field too
                        add(scenario, target, (*parts, "nsgx"), "value")
                for key, value in node.items():
                    walk(value, (*parts, str(key)), scenario, target)
            elif isinstance(node, list):
                if not node and (*(p for p in parts if isinstance(p, str)), "[]") in schema_strings:
                    add(scenario, target, (*parts, 0), "item")  # an empty list of strings
                string_items = [i for i, item in enumerate(node) if isinstance(item, str)]
                # The first and last item: items of one list are rendered by one loop.
                for index in sorted({*string_items[:1], *string_items[-1:]}):
                    add(scenario, target, (*parts, index), "item")
            elif isinstance(node, str) or (node is None and tuple(parts) in schema_strings):
                add(scenario, target, parts, "value")

        walk(data, (), scenario, target)
    # output_dir is where, not what: every case sets it (the fuzz tests cover its values).
    return [f for f in fields if f.parts != ("output_dir",)]


def scenario_overrides(scenario: Scenario, shared_fs: Path) -> list[str]:
    """The scenario as overrides, with every path the scripts touch under `shared_fs`."""
    words = list(scenario.groups)
    if scenario.experiment:
        words.append(f"experiment={scenario.experiment}")
    words += [f"++{path}={hydra_value(value)}" for path, value in scenario.settings]
    return [*words, f"cluster.shared_fs={shared_fs}"]


# ---------------------------------------------------------------------------------------------
# Building inputs


def hydra_quote(value: str) -> str:
    """`value` as a single-quoted Hydra string: escape quotes, and double the backslashes that
    precede a quote or the end (the only ones Hydra's grammar treats as escapes)."""
    out: list[str] = []
    run = 0
    for char in value:
        if char == "\\":
            run += 1
            continue
        if char == "'":
            out.append("\\" * (2 * run) + "\\'")
        else:
            out.append("\\" * run + char)
        run = 0
    out.append("\\" * (2 * run))
    return "'" + "".join(out) + "'"


def hydra_value(value: Any) -> str:
    if isinstance(value, str):
        return hydra_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


_PARSER = OverridesParser.create()


def override_for(dotted: str, value: Any) -> str | None:
    """`++dotted=value`, or None when Hydra's grammar cannot carry it (checked by parsing)."""
    text = f"++{dotted}={hydra_value(value)}"
    try:
        parsed = _PARSER.parse_overrides([text])[0]
        same = parsed.key_or_group == dotted and parsed.value() == value
    except Exception:  # noqa: BLE001 - any parse failure means: not expressible as an override
        return None
    return text if same else None


@dataclass(frozen=True)
class Assignment:
    """What a case sets: the config path (as parts, a map key may hold dots) and its value."""

    parts: tuple[str, ...]
    value: Any


def assignment(field: Field, original: Any, value: str) -> Assignment:
    if field.kind == "item":
        *parents, index = field.parts
        assert isinstance(index, int)
        items = list(original)
        if index < len(items):
            items[index] = value
        else:
            items.append(value)
        return Assignment(tuple(str(p) for p in parents), items)
    if field.kind == "key":
        # A new entry named `value`, holding a copy of an existing entry's value.
        entries = dict(original or {})
        sample: Any = copy.deepcopy(next(iter(entries.values()))) if entries else "x"
        return Assignment((*(str(p) for p in field.parts), value), sample)
    return Assignment(tuple(str(p) for p in field.parts), value)


def original_value(field: Field, data: dict[str, Any]) -> Any:
    if field.kind == "item":
        return _get(data, field.parts[:-1])
    try:
        return _get(data, field.parts)
    except KeyError:
        return None  # a new map entry


def benign_value(field: Field, original: Any) -> str | None:
    """The value the baseline holds: the packaged one when there is one."""
    if field.kind == "item":
        index = field.parts[-1]
        assert isinstance(index, int)
        return str(original[index]) if index < len(original) else None
    if field.kind == "key":
        return "NSGKEY"
    return original if isinstance(original, str) else None


NULL_CANDIDATES = ("hvbenign", "/hvbenign", "--hvbenign", "hvbenign.py")


# ---------------------------------------------------------------------------------------------
# Running nsysgen and the generated scripts


@dataclass
class Sandbox:
    """A folder holding everything one case touches; wiped between cases."""

    root: Path

    @property
    def shared_fs(self) -> Path:
        return self.root / "fs"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def cfg(self) -> Path:
        return self.root / "cfg"

    @property
    def cwd(self) -> Path:
        # Deep enough that a relative `../` in a value stays inside the sandbox.
        return self.root / "run" / "a" / "b"

    @property
    def mark(self) -> Path:
        return self.root / MARK

    def reset(self) -> None:
        for name in ("fs", "out", "log", "cfg", "run", "tmp", "home"):
            shutil.rmtree(self.root / name, ignore_errors=True)
        for child in self.root.iterdir():
            if MARK in child.name:
                child.unlink()
        for path in (self.log, self.cwd, self.root / "tmp", self.root / "home"):
            path.mkdir(parents=True)
        if not self.bin.is_dir():
            self.bin.mkdir()
            for tool in TOOLS:
                (self.bin / tool).symlink_to(STANDIN)

    def markers(self) -> list[str]:
        """Files a hostile value's `touch` created. A path field holding the value legitimately
        creates folders *named* after it (e.g. `x; touch `/.../PWNED.sq; '`), so only an exact
        marker name counts, outside any folder whose name holds the word touch."""
        found = []
        for path in self.root.rglob(f"{MARK}*"):
            parts = path.relative_to(self.root).parts
            if re.fullmatch(rf"{MARK}\.\w+", path.name) and not any("touch" in p for p in parts):
                found.append(str(path))
        return sorted(found)


@dataclass
class Compile:
    code: int
    err: str
    folder: Path | None


class _SharedComposer:
    """Stands in for nsysgen.cli.Composer: without --config-dir, one Composer (and its cache of
    composed group choices) serves every case, as in one long process; a --config-dir tree
    changes between cases, so it gets a fresh one."""

    shared: Composer | None = None

    def __new__(cls, config_dirs: Any = ()) -> Composer:  # type: ignore[misc]
        if list(config_dirs):
            return Composer(config_dirs)
        if cls.shared is None:
            cls.shared = Composer()
        return cls.shared


def run_nsysgen(box: Sandbox, args: list[str]) -> Compile:
    out, err = io.StringIO(), io.StringIO()
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(box.root / CANARY)
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            pytest.MonkeyPatch.context() as patch,
        ):
            patch.setattr("nsysgen.cli.Composer", _SharedComposer)
            code = main([*args, f"output_dir={box.out}"])
    finally:
        if old_home is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old_home
    manifests = sorted(box.out.rglob("nsysgen-manifest.json")) if box.out.exists() else []
    folder = manifests[0].parent if len(manifests) == 1 else None
    return Compile(code, err.getvalue(), folder)


def compile_field(
    box: Sandbox, field: Field, value: Any, via: str, composer: Composer
) -> tuple[Compile, dict[str, Any] | None] | None:
    """Compile the scenario with `value` at `field`; None when `via` cannot express it. Returns
    the compile and, after exit 0, the composed data (for paths the stand-ins need)."""
    scenario = SCENARIO_BY_NAME[field.scenario]
    groups = scenario_overrides(scenario, box.shared_fs)
    data = composer.compose(groups).data
    set_to = assignment(field, original_value(field, data), value) if value is not None else None
    if via == "override":
        args = list(groups)
        if set_to is not None:
            text = override_for(".".join(set_to.parts), set_to.value)
            if text is None:
                return None
            args.append(text)
        result = run_nsysgen(box, args)
        return result, (composer.compose(args).data if result.code == 0 else None)
    # The realistic path: a user experiment, extending the scenario's, that holds the value.
    document: dict[str, Any] = {
        "defaults": [*([scenario.experiment] if scenario.experiment else []), "_self_"],
        "cluster": {"shared_fs": str(box.shared_fs)},
    }
    for path, setting in scenario.settings:
        *parents, last = path.split(".")
        node = document
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = setting
    if set_to is not None:
        node = document
        for part in set_to.parts[:-1]:
            node = node.setdefault(part, {})
        node[set_to.parts[-1]] = set_to.value
    box.cfg.joinpath("experiment").mkdir(parents=True, exist_ok=True)
    text = "# @package _global_\n" + yaml.safe_dump(document, allow_unicode=True)
    box.cfg.joinpath("experiment", "hostile.yaml").write_text(text, encoding="utf-8")
    words = [*(g for g in scenario.groups), "experiment=hostile"]
    result = run_nsysgen(box, ["--config-dir", str(box.cfg), *words])
    if result.code != 0:
        return result, None
    # The same values as an override compose much faster than a second --config-dir compose.
    text = override_for(".".join(set_to.parts), set_to.value) if set_to else None
    if set_to is None or text is not None:
        return result, composer.compose([*groups, *([text] if text else [])]).data
    return result, Composer([box.cfg]).compose(words).data


@dataclass
class ScriptRuns:
    records: list[tuple[str, ...]]  # per call: tool, argv..., then sorted environment entries
    codes: dict[str, int]
    stderr: dict[str, str]


VOLATILE_ENV = ("PWD=", "OLDPWD=", "SHLVL=", "_=")


def _normalise(text: str) -> str:
    # mktemp names and the PIDs fetch-reports.sh puts in pod names differ run to run.
    text = re.sub(r"tmp\.[A-Za-z0-9]{10}", "tmp.RANDOM", text)
    text = re.sub(r"record\.[A-Za-z0-9]{10}", "record.RANDOM", text)
    return re.sub(r"nsysgen-fetch-\d+", "nsysgen-fetch-PID", text)


def read_records(log: Path) -> list[tuple[str, ...]]:
    records = []
    for path in sorted(log.iterdir()):
        words = path.read_bytes().decode("utf-8", "surrogateescape").split("\0")
        tool, argc = words[0], int(words[1])
        argv = words[2 : 2 + argc]
        env = sorted(
            w for w in words[2 + argc :] if w and not w.startswith(VOLATILE_ENV) and "=" in w
        )
        records.append(tuple(_normalise(w) for w in (tool, *argv, "--env--", *env)))
    return sorted(records)


def scripts_of(folder: Path) -> list[Path]:
    present = [folder / name for name in SCRIPT_ORDER if (folder / name).is_file()]
    others = [
        p
        for p in sorted(folder.iterdir())
        if p.is_file()
        and p not in present
        and p.name != "nsys-exec"  # run by srun, as on a cluster
        and os.access(p, os.X_OK)
        and p.read_bytes().startswith((b"#!/bin/bash", b"#!/usr/bin/env bash"))
    ]
    return present + others


def shell_files(folder: Path) -> list[Path]:
    return [
        p
        for p in sorted(folder.iterdir())
        if p.is_file() and p.read_bytes().startswith((b"#!/bin/bash", b"#!/usr/bin/env bash"))
    ]


def run_scripts(box: Sandbox, folder: Path, data: dict[str, Any]) -> ScriptRuns:
    nsight = data["nsight"]
    env = {
        "PATH": f"{box.bin}:/usr/bin:/bin",
        "HOME": str(box.root / "home"),
        "TMPDIR": str(box.root / "tmp"),
        "LANG": "C.UTF-8",
        "NSYSGEN_STANDIN_LOG": str(box.log),
        "NSYSGEN_STANDIN_PREFIX": str(nsight["install"]["package_prefix"]),
        "NSYSGEN_STANDIN_NSYS": str(nsight["layout"]["nsys"]),
        "NSYSGEN_STANDIN_IMPORTER": str(nsight["layout"]["importer"]),
        "NSYSGEN_DIR": str(folder),
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "hostile",
        "SLURM_JOB_NODELIST": "node[1-2]",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NNODES": "2",
        "SLURM_NTASKS": "16",
        "SLURM_NTASKS_PER_NODE": "8",
        "SLURM_SUBMIT_DIR": str(box.cwd),
        "SLURMD_NODENAME": "node1",
        # storage-secret.sh reads the S3 credentials from the caller's environment.
        "AWS_ACCESS_KEY_ID": "hvkeyid",
        "AWS_SECRET_ACCESS_KEY": "hvsecret",
        "AWS_DEFAULT_REGION": "us-west-2",
    }
    env = {k: v.replace("\0", "") for k, v in env.items()}
    if not (folder / "install-nsight.sh").is_file():
        # EKS: nsys is installed by hand where recipes.sh looks for it; the stand-in plays it.
        with contextlib.suppress(OSError, ValueError):
            root = box.cwd / str(data["cluster"]["nsight_root"])
            for rel in (nsight["layout"]["nsys"], nsight["layout"]["importer"]):
                (root / str(rel)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(STANDIN, root / str(rel))
    # recipes.sh needs a report to work on, where the job would have written it.
    with contextlib.suppress(OSError, ValueError):
        report_dir = box.cwd / str(data["capture"]["report_dir"])
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / "node1.nsys-rep").write_bytes(b"")
    codes: dict[str, int] = {}
    stderr: dict[str, str] = {}
    for script in scripts_of(folder):
        try:
            proc = subprocess.run(
                ["bash", str(script)],
                cwd=box.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=SCRIPT_TIMEOUT_S,
                check=False,
            )
            codes[script.name] = proc.returncode
            stderr[script.name] = proc.stderr.decode("utf-8", "replace")[-400:]
        except subprocess.TimeoutExpired:
            codes[script.name] = -999
            stderr[script.name] = f"hung for more than {SCRIPT_TIMEOUT_S} s"
    return ScriptRuns(read_records(box.log), codes, stderr)


# ---------------------------------------------------------------------------------------------
# What one compiled folder looks like, reduced to what must not change with the value


@dataclass
class Observed:
    files: list[str]
    runs: ScriptRuns
    yaml_docs: dict[str, list[Any]]
    python_trees: dict[str, str]
    directives: list[str]
    split_args: dict[str, int]  # YAML strings the injector splits on whitespace -> word count
    problems: list[str]  # structural failures found on the way


def sbatch_directives(text: str) -> list[str]:
    """The #SBATCH lines sbatch reads: those before the first line that is not a comment."""
    found = []
    for line in text.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            # sbatch drops the double quotes around a value (nsysgen quotes values with spaces
            # or "#"); compare what it reads, not how it is spelled.
            name, _, value = line.partition("=")
            unquoted = value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
            found.append(f"{name}={unquoted}" if _ else line)
    return found


def _args_strings(node: Any, path: str, out: dict[str, int]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and str(key).endswith("Args"):
                out[f"{path}.{key}"] = len(value.split())
            _args_strings(value, f"{path}.{key}", out)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _args_strings(item, f"{path}[{index}]", out)


class _Substitute(ast.NodeTransformer):
    def __init__(self, swap: Swap) -> None:
        self.swap = swap

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str):
            return ast.Constant(self.swap.text(node.value))
        return node


@dataclass(frozen=True)
class Swap:
    """Replaces the hostile value (raw, regex-escaped, JSON-escaped) by the benign one."""

    pairs: tuple[tuple[str, str], ...]

    @staticmethod
    def of(hostile: str, benign: str) -> Swap:
        pairs = [
            (re.escape(hostile), re.escape(benign)),
            (json.dumps(hostile)[1:-1], json.dumps(benign)[1:-1]),
            (
                json.dumps(hostile, ensure_ascii=False)[1:-1],
                json.dumps(benign, ensure_ascii=False)[1:-1],
            ),
            (hostile, benign),
        ]
        return Swap(tuple((h, b) for h, b in pairs if h and h != b))

    def text(self, value: str) -> str:
        for hostile, benign in self.pairs:
            value = value.replace(hostile, benign)
        return value

    def data(self, node: Any) -> Any:
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, list):
            return [self.data(v) for v in node]
        if isinstance(node, dict):
            return {self.data(k): self.data(v) for k, v in node.items()}
        return node


IDENTITY = Swap(())


def observe(box: Sandbox, folder: Path, data: dict[str, Any], swap: Swap) -> Observed:
    problems: list[str] = []
    for script in shell_files(folder):
        check = subprocess.run(
            ["bash", "-n", str(script)], capture_output=True, text=True, check=False
        )
        if check.returncode != 0:
            problems.append(f"{script.name}: bash -n fails: {check.stderr.strip()[:300]}")
    yaml_docs: dict[str, list[Any]] = {}
    split_args: dict[str, int] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except yaml.YAMLError as exc:
            problems.append(f"{path.name}: not valid YAML: {str(exc)[:300]}")
            continue
        yaml_docs[path.name] = swap.data(docs)
        _args_strings(docs, path.name, split_args)
    manifest = folder / "nsysgen-manifest.json"
    try:
        json.loads(manifest.read_text(encoding="utf-8"))
    except ValueError as exc:
        problems.append(f"nsysgen-manifest.json: not valid JSON: {exc}")
    python_trees: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
        try:
            py_compile.compile(str(path), cfile=str(box.root / "tmp" / "x.pyc"), doraise=True)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            python_trees[path.name] = ast.dump(_Substitute(swap).visit(tree))
        except (py_compile.PyCompileError, SyntaxError, ValueError) as exc:
            problems.append(f"{path.name}: not valid Python: {str(exc)[:300]}")
    for path in sorted(folder.iterdir()):
        if path.is_file() and CANARY.encode() in path.read_bytes():
            problems.append(f"{path.name}: holds the caller's $HOME (an environment leak)")
    sbatch = folder / "job.sbatch"
    directives = (
        [swap.text(d) for d in sbatch_directives(sbatch.read_text(encoding="utf-8"))]
        if sbatch.is_file()
        else []
    )
    runs = run_scripts(box, folder, data)
    runs.records = sorted(tuple(swap.text(w) for w in record) for record in runs.records)
    return Observed(
        sorted(p.name for p in folder.iterdir()),
        runs,
        yaml_docs,
        python_trees,
        directives,
        split_args,
        problems,
    )


def compare(base: Observed, got: Observed) -> list[str]:  # noqa: C901 - a flat list of checks
    """Differences between a hostile outcome (value swapped back) and the baseline."""
    problems = []
    if base.files != got.files:
        problems.append(f"files differ: {base.files} vs {got.files}")
    if base.directives != got.directives:
        problems.append(
            "#SBATCH directives sbatch reads differ: "
            f"{sorted(set(base.directives) ^ set(got.directives))}"
        )
    for name in sorted(set(base.yaml_docs) | set(got.yaml_docs)):
        if name in got.yaml_docs and base.yaml_docs.get(name) != got.yaml_docs.get(name):
            problems.append(f"{name}: YAML does not round-trip the value (structure or text)")
    for name, count in sorted(got.split_args.items()):
        if base.split_args.get(name) != count:
            problems.append(
                f"{name}: split into {count} words, baseline {base.split_args.get(name)}"
            )
    for name in sorted(set(base.python_trees) & set(got.python_trees)):
        if base.python_trees[name] != got.python_trees[name]:
            problems.append(f"{name}: Python syntax tree differs beyond the value")
    for name, code in sorted(got.runs.codes.items()):
        if base.runs.codes.get(name) != code:
            problems.append(
                f"{name}: exit {code}, baseline {base.runs.codes.get(name)}: "
                f"{got.runs.stderr[name].strip()[-300:]!r}"
            )
    missing = [r for r in base.runs.records if r not in got.runs.records]
    extra = [r for r in got.runs.records if r not in base.runs.records]
    for record in extra[:3]:
        near = _closest(record, missing)
        problems.append(
            f"call not in baseline: {_show(record)}"
            + (f"\n      baseline: {_show(near)}" if near else "")
        )
    if len(extra) > 3:
        problems.append(f"... {len(extra) - 3} more calls not in baseline")
    if missing and not extra:
        problems.append(f"calls missing: {[_show(r) for r in missing[:3]]}")
    return problems


def _show(record: tuple[str, ...]) -> str:
    argv = record[: record.index("--env--")]
    return repr(list(argv))[:600]


def _closest(record: tuple[str, ...], candidates: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    same_tool = [c for c in candidates if c[0] == record[0]]
    return same_tool[0] if same_tool else None


# ---------------------------------------------------------------------------------------------
# The cases


@dataclass
class Baseline:
    value: str | None
    observed: Observed | None  # None: no benign value of this field compiles


class Harness:
    """Session state: the sandbox, one composer, and a baseline per (field, via)."""

    def __init__(self, root: Path) -> None:
        self.box = Sandbox(root)
        self.composer = Composer()
        self.baselines: dict[tuple[Field, str], Baseline] = {}

    def original(self, field: Field) -> Any:
        scenario = SCENARIO_BY_NAME[field.scenario]
        data = self.composer.compose(scenario_overrides(scenario, self.box.shared_fs)).data
        return original_value(field, data)

    def baseline(self, field: Field, via: str) -> Baseline:
        key = (field, via)
        if key not in self.baselines:
            original = self.original(field)
            benign = benign_value(field, original)
            candidates = [benign] if benign is not None else list(NULL_CANDIDATES)
            found = Baseline(None, None)
            for candidate in candidates:
                self.box.reset()
                result = compile_field(self.box, field, candidate, via, self.composer)
                if result is None or result[0].code != 0 or result[1] is None:
                    continue
                assert result[0].folder is not None
                observed = observe(self.box, result[0].folder, result[1], IDENTITY)
                assert not observed.problems, (field.dotted, candidate, observed.problems)
                found = Baseline(candidate, observed)
                break
            self.baselines[key] = found
        return self.baselines[key]

    def case(self, field: Field, hostile: Hostile, via: str) -> list[str]:
        """Problems of one case; [] when it holds. Skips when `via` cannot carry the value."""
        base = self.baseline(field, via)
        prefix = base.value if base.value is not None else ""
        value = hostile.template.format(mark=self.box.mark, base=prefix)
        self.box.reset()
        before = _tree(self.box.root)
        result = compile_field(self.box, field, value, via, self.composer)
        if result is None:
            pytest.skip("Hydra's override grammar cannot carry this value")
        compiled, data = result
        problems: list[str] = []
        written = sorted(set(_tree(self.box.root)) - set(before) - {"out"})
        written = [w for w in written if w != "cfg" and not w.startswith(("out/", "cfg/"))]
        if written:
            problems.append(f"compile wrote outside output_dir: {written[:5]}")
        if compiled.code == 2:
            if field.error_path not in compiled.err:
                problems.append(
                    f"exit 2 but the error does not name {field.error_path}: "
                    f"{compiled.err.strip()[:400]!r}"
                )
            files = (
                [p for p in self.box.out.rglob("*") if p.is_file()] if self.box.out.exists() else []
            )
            if files:
                problems.append(f"exit 2 but wrote {[str(f) for f in files[:5]]}")
            return problems
        if compiled.code != 0:
            return [f"exit {compiled.code}: {compiled.err.strip()[:400]!r}"]
        if compiled.folder is None or data is None:
            return ["exit 0 but no single compiled folder"]
        swap = IDENTITY if hostile.resolves or base.value is None else Swap.of(value, base.value)
        got = observe(self.box, compiled.folder, data, swap)
        problems += got.problems
        if base.observed is not None and not hostile.resolves and field.dotted not in SLUGGED:
            problems += compare(base.observed, got)
        markers = self.box.markers()
        if markers:
            problems.insert(0, f"INJECTION: marker files created: {markers}")
        return problems


# Fields whose value also names a folder in slug form (a pace recipe's output folder): the
# folder name differs by design; the value itself is still checked to arrive intact.
SLUGGED = {"capture.pace_kernels[0]"}


def _tree(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*")]


FIELDS = enumerate_fields()
VIAS = ("override", "config-dir")
MATRIX = [(f, h, v) for f in FIELDS for h in HOSTILE for v in VIAS]
print(
    f"hostile matrix: {len(FIELDS)} fields x {len(HOSTILE)} values x {len(VIAS)} input paths "
    f"= {len(MATRIX)} cases"
)

# The default tier: a few fields the issue showed reaching live code.
FAST = {
    ("cluster.env.<key>", "cmdsubst"),
    ("workload.python.args[0]", "squote-break"),
    ("target.sbatch.nsgx", "newline"),
}
# Through --config-dir files (a fresh Hydra load per case, ~3x the cost of an override), CI runs
# these values for every field; NSYSGEN_HOSTILE_FULL=1 runs all of them (see SECURITY.md).
CONFIG_DIR_VALUES = {"newline", "cmdsubst", "squote-break", "backtick", "dotdot"}
FULL = os.environ.get("NSYSGEN_HOSTILE_FULL") == "1"


def _ids(case: tuple[Field, Hostile, str]) -> str:
    field, hostile, via = case
    return f"{field.scenario}:{field.dotted}:{hostile.label}:{via}"


@pytest.fixture(scope="session")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield Harness(tmp_path_factory.mktemp("hostile"))


def _check(harness: Harness, case: tuple[Field, Hostile, str]) -> None:
    field, hostile, via = case
    problems = harness.case(field, hostile, via)
    assert not problems, f"{_ids(case)}:\n  " + "\n  ".join(problems)


FAST_CASES = [c for c in MATRIX if (c[0].dotted, c[1].label) in FAST and c[2] == "config-dir"]


@pytest.mark.slow
@pytest.mark.parametrize("case", FAST_CASES, ids=[_ids(c) for c in FAST_CASES])
def test_hostile_value_is_refused_or_inert(
    harness: Harness, case: tuple[Field, Hostile, str]
) -> None:
    _check(harness, case)


SLOW_CASES = [
    c
    for c in MATRIX
    if c not in FAST_CASES and (FULL or c[2] == "override" or c[1].label in CONFIG_DIR_VALUES)
]


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=[_ids(c) for c in SLOW_CASES])
def test_hostile_matrix(harness: Harness, case: tuple[Field, Hostile, str]) -> None:
    _check(harness, case)


def test_matrix_covers_every_kind_of_field() -> None:
    """The enumeration finds the fields the issue names, so a refactor cannot shrink it."""
    names = {f.dotted for f in FIELDS}
    for expected in (
        "job.name",
        "cluster.env.<key>",
        "target.sbatch.nsgx",
        "workload.nccl.build_dir",
        "workload.python.interpreter",
        "workload.container_image",
        "capture.extra_args[0]" if "capture.extra_args[0]" in names else "capture.extra_args.nsgx",
        "nsight.install.urls[0]",
        "target.torchrun_path",
        "target.nsight_image",
        "cluster.partition",
        "capture.report_name",
    ):
        assert expected in names, expected
    assert len(MATRIX) >= 1000
    for scenario in SCENARIOS:  # a renamed field must not drop out of a scenario's subset
        if scenario.fields is not None:
            found = {f.dotted for f in FIELDS if f.scenario == scenario.name}
            assert found == scenario.fields, (scenario.name, sorted(scenario.fields - found))


@pytest.mark.slow
def test_standins_record_each_argument_whole(harness: Harness) -> None:
    """The harness itself: an argument with spaces, quotes, newline and glob is one record word,
    and a baseline compile runs every script to exit 0 twice with identical records."""
    box = harness.box
    box.reset()
    subprocess.run(
        ["bash", "-c", 'srun --label kubectl "a b" "$1" "*"', "x", "q'\"\n"],
        env={"PATH": f"{box.bin}:/usr/bin:/bin", "NSYSGEN_STANDIN_LOG": str(box.log)},
        check=True,
    )
    argvs = [r[: r.index("--env--")] for r in read_records(box.log)]
    assert ("kubectl", "a b", "q'\"\n", "*") in argvs
    assert ("srun", "--label", "kubectl", "a b", "q'\"\n", "*") in argvs
    for scenario in SCENARIOS:
        field = Field(scenario.name, ("job", "name"), "value")
        first = harness.baseline(field, "override").observed
        assert first is not None, scenario.name
        assert all(code == 0 for code in first.runs.codes.values()), first.runs.stderr
        box.reset()
        again = compile_field(box, field, None, "override", harness.composer)
        assert again is not None and again[0].folder is not None and again[1] is not None
        second = observe(box, again[0].folder, again[1], IDENTITY)
        assert compare(first, second) == []
