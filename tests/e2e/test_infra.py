"""tests/infra/fetch-nsys.sh takes its Debian mirror from the machine's own apt sources.

The mirror detection runs against fake apt configuration folders (FETCH_NSYS_APT_ROOT, or apt's
own APT_CONFIG), in both source formats, without downloading anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "tests" / "infra" / "fetch-nsys.sh"
# Host names under .invalid never resolve: nothing here can reach a real mirror.
MIRROR = "http://mirror.example.invalid/debian"

DEB822 = f"""\
Types: deb
URIs: http://disabled.example.invalid/debian
Suites: trixie
Components: main
Enabled: no

Types: deb-src
URIs: http://sources-only.example.invalid/debian
Suites: bookworm
Components: main

Types: deb
# a comment inside a paragraph
URIs: http://security.example.invalid/debian-security
Suites: bookworm-security
Components: main

types: deb deb-src
uris: {MIRROR}
suites: bookworm bookworm-updates
components: main
signed-by: /usr/share/keyrings/debian-archive-keyring.gpg
"""

THIRD_PARTY = """\
Types: deb
URIs: https://node.example.invalid/node_20.x
Suites: nodistro
Components: main
"""

ONE_LINE = f"""\
# deb http://commented.example.invalid/debian bookworm main
deb-src http://sources-only.example.invalid/debian bookworm main
deb https://apt.example.invalid/ubuntu jammy main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {MIRROR}/ bookworm main
deb http://later.example.invalid/debian bookworm main
"""


def apt_root(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "root"
    (root / "etc" / "apt" / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (root / "etc" / "apt" / name).write_text(text)
    return root


def print_mirror(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("APT_CONFIG", "FETCH_NSYS_APT_ROOT")}
    return subprocess.run(
        ["bash", str(SCRIPT), "--print-mirror"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(
            {"sources.list.d/debian.sources": DEB822, "sources.list.d/a-node.sources": THIRD_PARTY},
            id="deb822",
        ),
        pytest.param({"sources.list": ONE_LINE}, id="one-line"),
        pytest.param(
            {"sources.list.d/debian.list": ONE_LINE, "sources.list.d/other.sources": THIRD_PARTY},
            id="one-line-in-parts",
        ),
        # apt reads sources.list before the parts folder.
        pytest.param(
            {
                "sources.list": ONE_LINE,
                "sources.list.d/z.list": "deb http://z.example.invalid/debian x main\n",
            },
            id="sources-list-first",
        ),
    ],
)
def test_mirror_comes_from_the_apt_sources(tmp_path: Path, files: dict[str, str]) -> None:
    result = print_mirror({"FETCH_NSYS_APT_ROOT": str(apt_root(tmp_path, files))})
    assert (result.returncode, result.stdout, result.stderr) == (0, MIRROR + "\n", "")


def test_no_debian_source_is_a_clear_failure(tmp_path: Path) -> None:
    root = apt_root(
        tmp_path,
        {
            "sources.list": "deb http://security.example.invalid/debian-security bookworm main\n",
            "sources.list.d/node.sources": THIRD_PARTY,
            # apt reads only *.list and *.sources: a renamed file is not a source.
            "sources.list.d/debian.sources.disabled": DEB822,
        },
    )
    result = print_mirror({"FETCH_NSYS_APT_ROOT": str(root)})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(
        "fetch-nsys.sh: no Debian archive mirror in this machine's apt sources "
        f"({root}/etc/apt/sources.list, {root}/etc/apt/sources.list.d/*.list, "
        f"{root}/etc/apt/sources.list.d/*.sources): need an enabled 'deb' source whose URI ends "
        "in /debian"
    ), result.stderr


def test_an_empty_apt_configuration_fails_too(tmp_path: Path) -> None:
    result = print_mirror({"FETCH_NSYS_APT_ROOT": str(tmp_path / "nothing")})
    assert result.returncode == 1 and "no Debian archive mirror" in result.stderr


@pytest.mark.skipif(shutil.which("apt-config") is None, reason="needs apt-config (Debian, Ubuntu)")
def test_apt_config_names_where_the_sources_are(tmp_path: Path) -> None:
    """Without the test override the script asks apt, so APT_CONFIG moves the sources too."""
    root = apt_root(tmp_path, {"sources.list.d/debian.sources": DEB822})
    config = tmp_path / "apt.conf"
    config.write_text(f'Dir "{root}/";\n')
    result = print_mirror({"APT_CONFIG": str(config)})
    assert (result.returncode, result.stdout) == (0, MIRROR + "\n"), result.stderr


def test_the_script_names_no_host() -> None:
    assert "://" not in SCRIPT.read_text()


MIRROR_HOSTS = ("deb.debian.org", "archive.ubuntu.com", "pypi.org", "pythonhosted.org", "npmjs")


def test_the_repository_names_no_package_mirror() -> None:
    hits = []
    for folder in ("nsysgen", "conf", "schemas", "generated", "tests/golden", "tests/infra"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix not in {".deb", ".sqlite", ".nsys-rep", ".png"}:
                text = path.read_text(errors="replace")
                hits += [f"{path.relative_to(REPO)}: {h}" for h in MIRROR_HOSTS if h in text]
    assert hits == []


def test_install_script_takes_debian_packages_from_the_machines_mirror(tmp_path: Path) -> None:
    from nsysgen.cli import main

    assert main(["nsight=2023.4.4", "job.name=j", f"output_dir={tmp_path}"]) == 0
    script = tmp_path / "j" / "install-nsight.sh"
    text = script.read_text().replace("root=", f"root={tmp_path}/root #", 1)
    script.write_text(text)
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "curl").write_text('#!/bin/bash\necho "${@: -1}" >> "$CURL_LOG"\nexit 1\n')
    (stub / "curl").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{stub}:{os.environ['PATH']}",
        "DEBIAN_MIRROR": "http://mirror.invalid/debian/",
        "CURL_LOG": str(tmp_path / "curl.log"),
    }
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode != 0  # the stand-in curl fails: only the URL matters here
    assert (tmp_path / "curl.log").read_text().splitlines() == [
        "http://mirror.invalid/debian/pool/non-free/n/nvidia-cuda-toolkit/"
        "nsight-systems-target_2023.4.4.54~12.4.1-2_amd64.deb"
    ]
