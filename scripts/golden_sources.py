"""What the committed golden files are made from, for both the tests that compare them and
`python -m scripts.regenerate` that writes them: the repository's paths, the experiments and
extra compile cases, the training scripts whose patches are golden, and how a tree and a patch
are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nsysgen.patching.patch import patch_source, unified_patch

REPO = Path(__file__).resolve().parent.parent
EXPERIMENTS = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))

# Compile cases beyond the experiments, each golden under tests/golden/<name>/out: overrides.
CASES = {
    "default": [],
    "local-python-steps": [
        "cluster=local",
        "workload=python",
        "capture=steps",
        "nsight=2023.4.4",
        "capture.first_step=3",
        "capture.last_step=5",
        "capture.ranks=one_per_node",
        "capture.recipes=[nvtx_sum,osrt_sum]",
        "job.name=local-python-steps",
    ],
    "p5-nvtx-all-ranks-gpu-metrics": [
        "workload=nemo",
        "capture=nvtx",
        "capture.ranks=all",
        "capture.nvtx_range=train",
        "capture.efa_metrics=true",
        "capture.gpu_metrics=true",
        "job.name=p5-nvtx",
    ],
}

SCRIPTS_DIR = REPO / "tests" / "training_scripts"
SCRIPTS = sorted(p.name for p in SCRIPTS_DIR.glob("*.py"))  # golden patches/<name>.patch
CORPUS = SCRIPTS_DIR / "corpus"
CORPUS_ENTRIES: list[dict[str, Any]] = json.loads((CORPUS / "corpus.json").read_text())
# Corpus scripts with a step loop (or step function) to patch; the others are refused or hand
# their loop to a library.
PATCHED = [e for e in CORPUS_ENTRIES if "refused" not in e and "library" not in e]


def tree_bytes(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root: relative path -> (content, permission bits)."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def read(path: Path) -> str:
    """A script as published: its line endings kept."""
    with path.open(encoding="utf-8", newline="") as file:
        return file.read()


def script_patch(name: str) -> str:
    """A training script's patch (its golden file): its edit only, no file added (the step
    helper is the generated tree's one copy)."""
    source = (SCRIPTS_DIR / name).read_text()
    return unified_patch(f"tests/training_scripts/{name}", source, patch_source(source))


def corpus_patch(entry: dict[str, Any]) -> str:
    """A corpus script's patch, with the loop line its entry gives where one is needed."""
    name = entry["file"]
    source = read(CORPUS / name)
    fix: dict[str, Any] = entry.get("fix", {})
    patched = patch_source(source, fix.get("loop_line"), fix.get("step_expr"))
    return unified_patch(f"tests/training_scripts/corpus/{name}", source, patched)
