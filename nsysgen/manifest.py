"""Provenance: the manifest every output folder carries, so `check` can rebuild and compare it.

JSON has no comments, so the manifest itself carries the regenerate command. It holds no time,
host, user or absolute path: only what the output depends on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysgen import __version__
from nsysgen.render import RenderedFile

MANIFEST_NAME = "nsysgen-manifest.json"


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
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: Path) -> Manifest:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            command=data["command"],
            overrides=tuple(data["overrides"]),
            config_dirs=tuple(data["config_dirs"]),
            choices=dict(data["choices"]),
            files={
                name: FileRecord(record["sha256"], record["mode"])
                for name, record in data["files"].items()
            },
            version=data["generated_by"].removeprefix("nsysgen "),
        )


def file_mode(executable: bool) -> int:
    # Explicit modes, so the user's umask cannot change what is committed.
    return 0o755 if executable else 0o644


def build_manifest(
    files: list[RenderedFile],
    command: str,
    overrides: tuple[str, ...],
    config_dirs: tuple[str, ...],
    choices: dict[str, str],
) -> Manifest:
    return Manifest(
        command=command,
        overrides=overrides,
        config_dirs=config_dirs,
        choices=dict(sorted(choices.items())),
        files={
            f.path: FileRecord(sha256(f.text.encode()), f"{file_mode(f.executable):04o}")
            for f in files
        },
    )
