"""The steps38 programs' own evidence of their step numbering (imported from beside them).

Right before each optimizer step a program calls `mark(key)`: an NVTX mark `proof pre-optimizer
<key>`, in the same nsys report as nsysgen's `step N` ranges, where <key> is a value read from the
framework that is unique per optimizer step (the Trainer's global step, the loop's own counter).
Once the framework has logged that optimizer step, `log(key, logged, by)` appends one JSON line to
PROOF_LOG (default ./proof.jsonl) that pairs the key with the step number the framework's own log
gives it. check.py then reads which keys each `step N` range holds and whether their logged
numbers are N: the proof rests on the framework's numbering, not on nsysgen's marks.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import torch

PREFIX = "proof pre-optimizer"


def mark(key: object) -> None:
    """The NVTX mark right before an optimizer step."""
    torch.cuda.nvtx.mark(f"{PREFIX} {key}")


def log(key: object, logged: int, by: str) -> None:
    """One line of PROOF_LOG: this process's key -> the number the framework logged for it."""
    record = {"pid": os.getpid(), "key": str(key), "logged": int(logged), "by": by}
    path = Path(os.environ.get("PROOF_LOG", "proof.jsonl"))
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")


def logged_pairs(log_dir: str) -> set[tuple[int, int]]:
    """(proof_key, step) of every row of a Lightning CSVLogger's metrics.csv that logged a
    `proof_key`: the key paired with the `step` Lightning logged it under."""
    pairs: set[tuple[int, int]] = set()
    with (Path(log_dir) / "metrics.csv").open(newline="") as file:
        for row in csv.DictReader(file):
            if row.get("proof_key"):
                pairs.add((int(float(row["proof_key"])), int(row["step"])))
    return pairs
