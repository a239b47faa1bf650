"""`nsysgen verify FOLDER`: the CLI of verify_core (the same code as the folder's own
nsysgen-verify.py), reading the expectations the folder was compiled with."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Sequence

from nsysgen.errors import EXIT_INVALID, close_flags
from nsysgen.shipped.verify import main

PROG = "nsysgen verify"


def _flags() -> list[str]:
    """verify's flags, read from its own --help: shipped/ is standard library only and builds
    its parser inside main(), so its help text is the one list of them that cannot drift."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        main(["--help"], prog=PROG)
    return sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text.getvalue())))


def run_verify(argv: Sequence[str]) -> int:
    words = list(argv)[: argv.index("--")] if "--" in argv else list(argv)
    names = [word.partition("=")[0] for word in words if word.startswith("--")]
    flags = _flags() if names else []
    for name in names:
        hint = close_flags(name, flags)
        if hint and not any(flag.startswith(name) for flag in flags):
            print(f"verify: error: verify does not take {name}{hint}", file=sys.stderr)
            return EXIT_INVALID
    return main(list(argv), prog=PROG)
