"""The CLI fuzzer's generator (issue 12, item 3), for tests/compile/test_fuzz.py and
bench/fuzz.py alike: random override sets over the real keys and groups -- group=option with
real, null, numeric and unknown options; key=value with values of every type (inf, nan, 1e308,
-1, huge ints, empty, lists, dicts, strings with control characters, odd paths) -- run through
`nsysgen`, `nsysgen plan`, `nsysgen plan --json` or `nsysgen -m`, and what a case did: its exit
code, its output, whether it hung or changed the output folder after exit 2."""

from __future__ import annotations

import contextlib
import io
import math
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import strategies as st

from nsysgen.cli import main
from nsysgen.config.compose import GROUPS, Composer

CASE_TIMEOUT_S = 20
CI_CASES = 2000

# ---------------------------------------------------------------------------------------------
# What the fuzzer draws from: the real keys and options of the packaged configs


def _leaf_keys(node: Any, prefix: str, out: set[str]) -> None:
    if isinstance(node, dict):
        if prefix:
            out.add(prefix)  # a whole block can be overridden too
        for key, value in node.items():
            _leaf_keys(value, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out.add(prefix)


def _real_keys_and_options() -> tuple[list[str], dict[str, list[str]]]:
    composer = Composer()
    options = {group: composer.group_options(group) for group in GROUPS}
    keys: set[str] = set()
    for target, workload in (("slurm", "nccl"), ("slurm", "fsdp"), ("slurm", "nemo")):
        for capture in ("window", "nvtx"):
            words = [f"target={target}", f"workload={workload}", f"capture={capture}"]
            _leaf_keys(composer.compose(words).data, "", keys)
    _leaf_keys(composer.compose(["experiment=fsdp-p5-eks"]).data, "", keys)
    # Group names are groups, not keys; output_dir gets values of its own (see OUTPUT_DIRS).
    keys -= {*GROUPS, "output_dir"}
    return sorted(keys), options


KEYS, OPTIONS = _real_keys_and_options()
# Relative or unwritable only: the fuzzer must never write outside its scratch folder.
OUTPUT_DIRS = ("out", "../x", "/dev/null/x", "", "a b", "out/../out2", ".", "x\ny")


def hydra_quote(value: str) -> str:
    """A single-quoted Hydra string (backslashes double only before a quote or the end)."""
    out: list[str] = []
    run = 0
    for char in value:
        if char == "\\":
            run += 1
            continue
        out.append("\\" * (2 * run) + "\\'" if char == "'" else "\\" * run + char)
        run = 0
    return "'" + "".join(out) + "\\" * (2 * run) + "'"


def _number_text(value: float | int) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


texts = st.text(
    alphabet=st.sampled_from(
        list("ab01_-./:*?$`'\" =,{}[]()\\%@~") + ["\n", "\r", "\t", "\x00", "\u2028", "é"]
    ),
    max_size=12,
)
scalars = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "1e308", "-1", "0", "1e-308", "null", "true", ""]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(_number_text),
    st.sampled_from(["/dev/null/x", "../x", "/", "~", "${oc.env:HOME}", "${job.name}", "???"]),
    texts.map(hydra_quote),
    st.from_regex(r"[a-z0-9_.\-]{0,8}", fullmatch=True),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.dictionaries(st.from_regex(r"[a-z_]{1,6}", fullmatch=True), inner, max_size=2).map(
            lambda d: "{" + ",".join(f"{k}:{v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=4,
)
keys = st.one_of(
    st.sampled_from(KEYS),
    st.sampled_from(KEYS).map(lambda k: k + ".nope"),
    st.from_regex(r"[a-z_]{1,8}(\.[a-z_0-9]{1,8}){0,2}", fullmatch=True),
)


@st.composite
def group_choice(draw: st.DrawFn) -> str:
    group = draw(st.sampled_from([*GROUPS, "nope"]))
    option = draw(
        st.one_of(
            st.sampled_from(OPTIONS.get(group, []) or ["x"]),
            st.sampled_from(["null", "5", "2024.4", "nope", "../x", "''", "[a]", "{a:1}"]),
        )
    )
    return f"{group}={option}"


@st.composite
def key_value(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(["", "", "", "+", "++", "~"]))
    key = draw(keys)
    if prefix == "~" and draw(st.booleans()):
        return f"~{key}"
    return f"{prefix}{key}={draw(values)}"


@st.composite
def sweep_value(draw: st.DrawFn) -> str:
    key = draw(st.one_of(st.sampled_from(KEYS), st.sampled_from(GROUPS)))
    body = draw(
        st.one_of(
            st.lists(scalars, min_size=2, max_size=3).map(",".join),
            st.sampled_from(["range(1,3)", "range(0)", "glob(p5*)", "choice(1,2)", "a,a"]),
        )
    )
    return f"{key}={body}"


@dataclass(frozen=True)
class Case:
    verb: tuple[str, ...]  # (), ("plan",), ("plan", "--json") or ("-m",)
    overrides: tuple[str, ...]
    output_dir: str | None

    def argv(self, scratch: Path) -> list[str]:
        target = scratch / "out" if self.output_dir is None else Path(self.output_dir)
        return [*self.verb, *self.overrides, f"output_dir={target}"]

    def __str__(self) -> str:
        out = "" if self.output_dir is None else f" output_dir={self.output_dir!r}"
        return "nsysgen " + " ".join(map(repr, [*self.verb, *self.overrides])) + out


@st.composite
def cases(draw: st.DrawFn) -> Case:
    verb = draw(st.sampled_from([(), (), ("plan",), ("plan", "--json"), ("-m",)]))
    parts = [group_choice(), key_value(), key_value()]
    if verb == ("-m",):
        parts.append(sweep_value())
    overrides = draw(st.lists(st.one_of(*parts), max_size=5))
    output_dir = draw(st.one_of(st.none(), st.none(), st.sampled_from(OUTPUT_DIRS)))
    return Case(verb, tuple(overrides), output_dir)


# ---------------------------------------------------------------------------------------------
# Running one case in this process


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so that main()'s `except Exception` (which maps bugs
    to exit 3) does not swallow it."""


@dataclass(frozen=True)
class Outcome:
    code: int  # -1: hung
    err: str
    changed_after_error: tuple[str, ...]

    @property
    def bad(self) -> str | None:
        """Why this outcome breaks the properties, or None."""
        if self.code == -1:
            return f"hung for more than {CASE_TIMEOUT_S} s"
        if self.code not in (0, 1, 2):
            return f"exit {self.code}: {self.err.strip()[-500:]}"
        if "Traceback" in self.err or "internal error" in self.err:
            return f"traceback on stderr: {self.err.strip()[-500:]}"
        if self.changed_after_error:
            return f"exit 2 but changed {list(self.changed_after_error)[:5]}"
        return None


class _SharedComposer:
    """One Composer for every case without --config-dir, as in one long-lived process: its cache
    of composed group choices makes a case cost milliseconds instead of a fresh compose."""

    shared: Composer | None = None

    def __new__(cls, config_dirs: Any = ()) -> Composer:  # type: ignore[misc]
        if list(config_dirs):
            return Composer(config_dirs)
        if cls.shared is None:
            cls.shared = Composer()
        return cls.shared


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for path in root.rglob("*"):
        with contextlib.suppress(OSError):
            stat = path.lstat()
            found[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size)
    return found


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


def run_case(case: Case, scratch: Path) -> Outcome:
    """Run one case in-process, from inside `scratch` (relative output folders land there)."""
    before = _snapshot(scratch)
    err = io.StringIO()
    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    cwd = Path.cwd()
    os.chdir(scratch / "cwd")
    signal.alarm(CASE_TIMEOUT_S)
    try:
        with (
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(err),
            pytest.MonkeyPatch.context() as patch,
        ):
            patch.setattr("nsysgen.cli.Composer", _SharedComposer)
            code = main(case.argv(scratch))
    except Hang:
        code = -1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
        os.chdir(cwd)
    changed: tuple[str, ...] = ()
    if code == 2:
        after = _snapshot(scratch)
        changed = tuple(
            sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        )
    return Outcome(code, err.getvalue(), changed)


def new_scratch(root: Path) -> Path:
    """A scratch folder: cases run in root/cwd, so that a relative "../x" stays inside root."""
    (root / "cwd").mkdir(parents=True, exist_ok=True)
    return root
