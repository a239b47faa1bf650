"""Run a training script under the torch stand-in (tests/standin), with the step helper either
patched into it or on PYTHONPATH (zero-patch), and read back what it asked of torch."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nsysgen.output.render import render_template
from nsysgen.patching.patch import PatchError, patch_library, patch_source
from nsysgen.shipped import STEP_WINDOW_FILE, source_text
from tests.conftest import REPO

HELPER = source_text("step_window")
SITE = render_template("common/sitecustomize.py.j2", header="# test copy")
STANDIN = REPO / "tests" / "standin"
COUNTED = ("forward", "backward", "optimizer.step", "scaler.skip", "mark")


@dataclass
class Run:
    starts: int = 0
    stops: int = 0
    recorded: list[str] = field(default_factory=list)  # labels pushed while recording
    steps: dict[str, list[str]] = field(default_factory=dict)  # label -> events inside
    mismatched: list[str] = field(default_factory=list)  # logged or marked with another number
    outside_marks: int = 0  # optimizer steps marked outside every step range
    numbering: list[str] = field(default_factory=list)  # the window's numbering marks
    stderr: str = ""

    def inside(self, n: int) -> list[str]:
        """The counted events of step n, first words only (`mark` for a mark)."""
        return [e.split()[0] for e in self.steps[f"step {n}"] if e.split()[0] in COUNTED]


def run_script(
    tmp_path: Path,
    source: str,
    env: dict[str, str],
    mode: str = "patch",
    extra_path: tuple[Path, ...] = (),
    standin: bool = True,
    step_expr: str | None = None,
) -> Run:
    """Run `source` as train.py: mode "patch" patches it (numbered by `step_expr` where given),
    "hook" puts the helper on PYTHONPATH, "beside" runs it as given with the helper beside it
    (a script that imports it itself)."""
    script = tmp_path / "train.py"
    path = [str(p) for p in extra_path]
    if mode == "patch":
        try:
            patched = patch_source(source, None, step_expr)
        except PatchError:  # the loop is a library's: its step callback (as compile does)
            patched = patch_library(source)
        script.write_bytes(patched.encode())
        (tmp_path / STEP_WINDOW_FILE).write_text(HELPER)  # as the patch adds it
    elif mode == "beside":
        script.write_text(source)
        (tmp_path / STEP_WINDOW_FILE).write_text(HELPER)
    else:
        script.write_text(source)
        path.insert(0, str(write_site(tmp_path / "nsysgen-site")))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NSYSGEN_PROFILE_")}
    # standin=False: real torch and libraries (tests/realtorch/fake_cuda.py records CUDA calls).
    environ.update(env, PYTHONPATH=os.pathsep.join([*path, *([str(STANDIN)] if standin else [])]))
    done = subprocess.run(
        [sys.executable, str(script)],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return parse(done.stdout, done.stderr)


def write_site(folder: Path) -> Path:
    """The zero-patch site folder as the launch files put it on PYTHONPATH."""
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITE)
    (folder / STEP_WINDOW_FILE).write_text(HELPER)
    return folder


def parse(stdout: str, stderr: str = "") -> Run:
    run, recording, label, ended = Run(stderr=stderr), False, None, None
    for line in stdout.splitlines():
        words = line.split()
        if words[:1] != ["@@"]:
            continue
        event = " ".join(words[1:])
        if event == "start":
            run.starts, recording = run.starts + 1, True
        elif event == "stop":
            run.stops, recording = run.stops + 1, False
        elif event.startswith("push "):
            label = event.removeprefix("push ")
            if recording:
                run.recorded.append(label)
            run.steps.setdefault(label, [])
        elif event == "pop":
            label, ended = None, label
        else:
            _other(run, event, words, label, ended)
            if event.startswith("log "):
                ended = None  # one log per ended range; after the window there is none
    return run


def _other(run: Run, event: str, words: list[str], label: str | None, ended: str | None) -> None:
    if event.startswith("mark nsysgen numbering "):
        run.numbering.append(event.removeprefix("mark nsysgen numbering "))
        return
    if event.startswith("log ") and ended is not None and ended != f"step {words[2]}":
        # A script logs a step after its optimizer step: the range that ended last.
        run.mismatched.append(f"{ended} logged as {event}")
    if event.startswith("mark "):
        if label is None:
            run.outside_marks += 1
        elif label != f"step {words[5]}":
            run.mismatched.append(f"{label} marked as {event}")
    if label is not None:
        run.steps[label].append(event)
