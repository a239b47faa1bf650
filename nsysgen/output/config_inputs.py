"""The user's `--config-dir` files a compile read, as manifest inputs: each file's sha256 (so
`check` knows it changed) and its values per dotted key (so `check` can say which key changed,
and from what to what, before it shows the diff of the generated files).

Only the files of the chosen options are recorded: editing an option no folder uses leaves
every manifest as it was. Paths are the `--config-dir` as typed plus `group/option.yaml`,
relative to the compile's working directory, like the training scripts' paths.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

# A value longer than this is recorded by digest: the manifest is committed and read in
# review, and a long list of arguments would swamp it. `check` then says it changed, not how.
_LONGEST = 120
_PACKAGE = re.compile(r"^#\s*@package\s+(\S+)")


def chosen_files(config_dirs: Sequence[str], choices: Mapping[str, str]) -> dict[str, Path]:
    """name -> path of each chosen option's file from a --config-dir (the first dir wins, as
    in composition)."""
    found = {}
    for group, option in sorted(choices.items()):
        for directory in config_dirs:
            path = Path(directory) / group / f"{option}.yaml"
            if path.is_file():
                found[path.as_posix()] = path
                break
    return found


def config_inputs(
    config_dirs: Sequence[str], choices: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(name -> sha256, name -> {dotted key: recorded value}) of the chosen --config-dir files."""
    digests, values = {}, {}
    for name, path in chosen_files(config_dirs, choices).items():
        data = path.read_bytes()
        digests[name] = hashlib.sha256(data).hexdigest()
        values[name] = file_values(data, path.parent.name)
    return digests, values


def file_values(data: bytes, group: str) -> dict[str, str]:
    """{dotted key: recorded value} of one option file, under the key its package puts it (a
    workload file's `command.args` is `workload.command.args`). The defaults list is recorded
    entry by entry, as `defaults: override /capture`."""
    text = data.decode("utf-8", errors="replace")
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}  # composing it failed first, with the file's line and column
    if not isinstance(loaded, dict):
        return {}
    out: dict[str, str] = {}
    for entry in loaded.pop("defaults", None) or []:
        if isinstance(entry, dict):
            for key, value in entry.items():
                out[f"defaults: {key}"] = _recorded(value)
        else:
            out[f"defaults: {entry}"] = _recorded(True)
    _flatten(loaded, _package(text, group), out)
    return dict(sorted(out.items()))


def _package(text: str, group: str) -> str:
    for line in text.splitlines()[:5]:
        match = _PACKAGE.match(line)
        if match:
            package = match.group(1)
            return "" if package == "_global_" else package.replace("_group_", group)
    return group


def _flatten(node: Any, path: str, out: dict[str, str]) -> None:
    if isinstance(node, dict) and node:
        for key, value in node.items():
            _flatten(value, f"{path}.{key}" if path else str(key), out)
    elif path:
        out[path] = _recorded(node)


def _recorded(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(", ", ": "), default=str)
    if len(text) > _LONGEST:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return text


def _shown(recorded: str) -> str:
    if recorded.startswith("sha256:"):
        return "a long value"
    try:
        value = json.loads(recorded)
    except ValueError:  # a manifest edited by hand: show what it holds
        return recorded
    return value if isinstance(value, str) and value.strip() == value and value else recorded


def changed_keys(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Each key whose recorded value differs: 'key (was X, now Y)', added or removed."""
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if old is None:
            lines.append(f"{key} (added: {_shown(str(new))})")
        elif new is None:
            lines.append(f"{key} (removed; was {_shown(old)})")
        else:
            lines.append(f"{key} (was {_shown(old)}, now {_shown(new)})")
    return lines
