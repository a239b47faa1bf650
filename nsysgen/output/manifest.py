"""Provenance: the manifest every output folder carries, so `check` can rebuild and compare it.

JSON has no comments, so the manifest itself carries the regenerate command. It holds no time,
host, user or absolute path: only what the output depends on.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsysgen import __version__
from nsysgen.errors import NsysgenError
from nsysgen.output.config_inputs import config_inputs
from nsysgen.output.render import RenderedFile

MANIFEST_NAME = "nsysgen-manifest.json"

# A path inside an output folder: plain names joined by "/", never absolute, never "." or "..".
# Manifests and sweep indexes are files in the user's tree that anyone can edit, and nsysgen
# deletes what they list: a listed path must not be able to point anywhere else.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")


class TamperedFile(NsysgenError):
    """A manifest or sweep index that nsysgen did not write as it is."""

    def user_message(self) -> str:
        return f"error: {self}"


def is_safe_relative(name: object) -> bool:
    return isinstance(name, str) and all(
        _SAFE_NAME.fullmatch(part) and part not in (".", "..") for part in name.split("/")
    )


def load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TamperedFile(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TamperedFile(f"{path}: not a JSON object")
    return data


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileRecord:
    sha256: str
    mode: str  # octal permission bits, e.g. "0755"


@dataclass(frozen=True)
class Manifest:
    command: str
    overrides: tuple[str, ...]
    config_dirs: tuple[str, ...]
    choices: dict[str, str]
    files: dict[str, FileRecord]
    version: str = __version__
    # Files the compile read (training scripts, --config-dir files) -> sha256, and the working
    # directory relative to the folder (set when paths were relative to it), so `check` works
    # from anywhere.
    inputs: dict[str, str] = field(default_factory=dict)
    root: str = ""
    # --config-dir file -> {dotted key: value}: what `check` names when the file changed.
    input_keys: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_text(self) -> str:
        data: dict[str, Any] = {
            "generated_by": f"nsysgen {self.version}",
            "command": self.command,
            "overrides": list(self.overrides),
            "config_dirs": list(self.config_dirs),
            "choices": self.choices,
            "files": {
                name: {"sha256": record.sha256, "mode": record.mode}
                for name, record in sorted(self.files.items())
            },
        }
        if self.inputs:
            data["inputs"] = dict(sorted(self.inputs.items()))
        if self.root:
            data["root"] = self.root
        if self.input_keys:
            data["input_keys"] = self.input_keys
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """The manifest at `path`; TamperedFile (naming it) if it is not one nsysgen wrote."""
        data = load_json(path)
        try:
            manifest = cls(
                command=str(data["command"]),
                overrides=tuple(str(o) for o in data["overrides"]),
                config_dirs=tuple(str(d) for d in data["config_dirs"]),
                choices={str(k): str(v) for k, v in dict(data["choices"]).items()},
                files={
                    name: FileRecord(str(record["sha256"]), str(record["mode"]))
                    for name, record in dict(data["files"]).items()
                },
                version=str(data["generated_by"]).removeprefix("nsysgen "),
                inputs={str(k): str(v) for k, v in dict(data.get("inputs", {})).items()},
                root=str(data.get("root", "")),
                input_keys={
                    str(name): {str(k): str(v) for k, v in dict(values).items()}
                    for name, values in dict(data.get("input_keys", {})).items()
                },
            )
        except KeyError as exc:
            missing = exc.args[0]
            raise TamperedFile(f"{path}: not an nsysgen manifest (no {missing!r} key)") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise TamperedFile(f"{path}: not an nsysgen manifest ({exc})") from None
        unsafe = sorted(name for name in manifest.files if not is_safe_relative(name))
        if unsafe or MANIFEST_NAME in manifest.files:
            raise TamperedFile(
                f"{path}: lists {', '.join(map(repr, unsafe or [MANIFEST_NAME]))}, which is not a "
                "file nsysgen writes inside the folder; restore the manifest from version control"
            )
        return manifest


def file_mode(executable: bool) -> int:
    # Explicit modes, so the user's umask cannot change what is committed.
    return 0o755 if executable else 0o644


def build_manifest(
    files: list[RenderedFile],
    command: str,
    overrides: tuple[str, ...],
    config_dirs: tuple[str, ...],
    choices: dict[str, str],
    inputs: dict[str, str] | None = None,
    root: str = "",
) -> Manifest:
    """The manifest of one folder; the chosen options' --config-dir files are read here, from
    the compile's working directory (where the recorded relative paths start)."""
    digests, input_keys = config_inputs(config_dirs, choices)
    return Manifest(
        command=command,
        overrides=overrides,
        config_dirs=config_dirs,
        choices=dict(sorted(choices.items())),
        files={
            f.path: FileRecord(sha256(f.text.encode()), f"{file_mode(f.executable):04o}")
            for f in files
        },
        inputs={**digests, **(inputs or {})},
        root=root,
        input_keys=input_keys,
    )
