"""Step numbers on public training scripts nsysgen was not built on
(tests/training_scripts/unseen/: verbatim, sources and licenses in corpus.json and licenses/).
Each entry holds the line the script logs its step number on and, where one expression read at
the optimizer step gives that number, the expression (`truth`; "library: <counter>" where a
library's loop owns the step; "count" where the script logs no number). What nsysgen answers is
judged against it: right (the number the log gives), asked (a setting to set, named), wrong.
The count is recorded here, so that a change of it is deliberate."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from nsysgen.patching.patch import PatchError, analyse
from tests.conftest import REPO

UNSEEN = REPO / "tests" / "training_scripts" / "unseen"
ENTRIES: list[dict[str, Any]] = json.loads((UNSEEN / "corpus.json").read_text())
# The judged answers today: right, asked, wrong (see each entry's `why` for the truth). Where
# the log shows each step as a number nsysgen cannot count by (an index within the epoch, a count
# of micro-batches, environment frames), the compile asks for step_expr. Before issue 47's last
# change: 20 right, 4 asked, 12 wrong.
ASKED = {
    "annotated_transformer.py",  # logs the epoch's own count
    "cleanrl_ppo_continuous_action.py",  # logs environment frames
    "dino_main.py",  # logs the index within the epoch
    "gptneox_training.py",  # several step loops, and the loop around them named
    "kdiffusion_train.py",  # a micro-batch count
    "llamafactory_ppo_trainer.py",  # the optimizer steps in another file (trl)
    "lora_gpt2_ft.py",  # counts micro-batches
    "pytorch_cifar_main.py",  # a progress bar within the epoch
    "spinningup_ppo.py",  # two step loops in one update
    "swin_main.py",  # the optimizer steps in another file
    "timm_train.py",  # logs the index within the epoch
    "wide_resnet_main.py",  # a progress bar within the epoch
    "yolov4_tianxiaomo_train.py",  # counts micro-batches
    "yolox_trainer.py",  # the console's index within the epoch
}
WRONG: set[str] = set()


def judged(entry: dict[str, Any]) -> str:
    source = (UNSEEN / entry["file"]).read_text(encoding="utf-8")
    truth: str | None = entry["truth"]
    try:
        found = analyse(source)
    except PatchError as error:
        library = (truth or "").removeprefix("library: ")
        if truth and truth.startswith("library: ") and f"own counter ({library}" in str(error):
            return "right"
        return "asked" if error.setting else "wrong"
    if truth == "count" or (truth is not None and found.at_step == truth):
        return "right"
    return "wrong"


def test_the_corpus_is_large_permissive_and_unseen() -> None:
    assert len(ENTRIES) >= 20
    assert {e["license"] for e in ENTRIES} <= {"MIT", "BSD-3-Clause", "Apache-2.0"}
    seen = {e["repo"] for e in json.loads((UNSEEN.parent / "corpus" / "corpus.json").read_text())}
    for entry in ENTRIES:
        assert (UNSEEN / entry["license_file"]).is_file(), entry["file"]
        assert entry["url"].endswith(f"/{entry['commit']}/{entry['path']}")
        assert entry["repo"] not in seen, entry["repo"]
        assert isinstance(entry["log_line"], int) and entry["log_expr"]
    assert sorted(e["file"] for e in ENTRIES) == sorted(p.name for p in UNSEEN.glob("*.py"))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_each_script_is_numbered_as_judged(entry: dict[str, Any]) -> None:
    name = entry["file"]
    expected = "asked" if name in ASKED else "wrong" if name in WRONG else "right"
    assert judged(entry) == expected, entry["why"]


def test_the_count() -> None:
    counts = Counter(judged(entry) for entry in ENTRIES)
    assert (counts["right"], counts["asked"], counts["wrong"]) == (22, 14, 0)


def test_the_logged_line_is_in_the_script() -> None:
    for entry in ENTRIES:
        lines = (UNSEEN / entry["file"]).read_text(encoding="utf-8").splitlines()
        assert 1 <= entry["log_line"] <= len(lines), entry["file"]
