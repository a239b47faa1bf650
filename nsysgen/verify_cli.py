"""`nsysgen verify FOLDER`: the CLI of verify_core (the same code as the folder's own
nsysgen-verify.py), reading the expectations the folder was compiled with."""

from __future__ import annotations

from collections.abc import Sequence

from nsysgen.shipped.verify import main


def run_verify(argv: Sequence[str]) -> int:
    return main(list(argv), prog="nsysgen verify")
