"""Overrides as the user typed them: the shapes Hydra's grammar would reject with a message
about itself (checked before Hydra reads them), a comma list meant as a list outside -m, and
digits meant as environment text."""

from __future__ import annotations

import re
from typing import Any

from hydra.core.override_parser.types import ChoiceSweep, Override, OverrideType

from nsysgen.config.keys import takes_list
from nsysgen.errors import ComposeError


def refuse_comma_list(override: Override) -> None:
    """`capture.ranks=0,8` outside -m: Hydra reads a sweep, but the user meant the list
    (the key takes one); saying "a sweep needs -m" would send them to the wrong fix."""
    value = override.value() if override.is_sweep_override() else None
    key = override.key_or_group
    if not isinstance(value, ChoiceSweep) or not value.simple_form or not takes_list(key):
        return
    items = str(override.input_line).partition("=")[2]
    leaf = key.rsplit(".", 1)[-1]
    what = f"a list of {leaf.replace('_', ' ')}" if leaf.endswith("s") else "a list"
    raise ComposeError(
        f"{override.input_line}: for {what} write {key}=[{items}] "
        f"(a comma outside brackets is a sweep, which needs -m)"
    )


_PAIRED_KEYS = re.compile(r"^[A-Za-z_][\w./-]*(\+[A-Za-z_][\w./-]*)+=")


def check_shape(text: str) -> None:
    """Overrides Hydra's parser would reject with a message about its grammar, not the cause."""
    key, equals, value = text.partition("=")
    if equals and not key.strip("+~"):
        raise ComposeError(f"{text!r}: an override needs a key before '=' (e.g. capture.delay=30)")
    if _PAIRED_KEYS.match(text):
        raise ComposeError(f"{text}: a paired sweep needs -m (--multirun): nsysgen -m {text}")


def quoting_hint(text: str) -> str:
    """Hydra's grammar takes '=' inside a list item as syntax; quoted items hold it."""
    key, _, value = text.partition("=")
    example = '["--max_steps=200", "--lr=1e-4"]'
    if "[" in value and "=" in value:
        return f"; list items holding '=' need quotes: {key}='{example}'"
    if "=" in value and key.endswith((".args", ".argv", "extra_args")):
        # `args=--max_steps=500,--lr=1e-4`: a list without its brackets.
        return f"; a list is written in brackets, items holding '=' quoted: {key}='{example}'"
    return ""


_ENV_VALUE = re.compile(r"^(cluster\.env\.[^.]+|(cluster|workload)\.env_defaults\.[^.]+\.value)$")


def env_integers_as_text(assignments: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """`cluster.env.NCCL_NCHANNELS_PER_NET_PEER=4` on the command line sets the text "4": an
    environment holds only text, and Hydra's grammar reads digits as a number. Only overrides:
    in a file, YAML has already turned `0022` into 18 and `0x10` into 16, so a number there is
    refused (the schema asks for text) rather than guessed at. Other numbers, booleans and
    null stay as they are, for the schema to refuse ("1.10" reads as 1.1)."""
    return [
        (key, str(value))
        if _ENV_VALUE.match(key) and isinstance(value, int) and not isinstance(value, bool)
        else (key, value)
        for key, value in assignments
    ]


def added_env_integer(override: Override) -> str | None:
    """`+cluster.env.OMP_NUM_THREADS=4` as the override `+cluster.env.OMP_NUM_THREADS='4'`:
    the same text as without the `+`. An added key is no plain assignment (Hydra itself must
    refuse it where the key exists already), so it reaches Hydra as override text rather than
    through env_integers_as_text; quoting the digits keeps that check and sets text."""
    value = override.value()
    if (
        override.type == OverrideType.ADD
        and override.package is None
        and _ENV_VALUE.match(override.key_or_group)
        and isinstance(value, int)
        and not isinstance(value, bool)
    ):
        return f"+{override.key_or_group}='{value}'"
    return None
