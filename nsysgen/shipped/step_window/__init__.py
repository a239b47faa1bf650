"""nsysgen's step helper: records training steps FIRST..LAST of a PyTorch program.

nsysgen writes this file into its output as `nsysgen_window.py`: into the `nsysgen-site` folder
that the launch puts first on PYTHONPATH (zero-patch: its `sitecustomize.py` calls `arm()` in
every Python process of the job), next to a patched training script (training-loop.patch adds
it and `window.open(step)` at the loop's top), or for an edit by hand. Standard library only;
torch is used once the program has imported it. Without NSYSGEN_PROFILE_FIRST_STEP and
NSYSGEN_PROFILE_LAST_STEP, or on a rank that is not recorded, nothing happens.

A training step ends at its optimizer step: torch's global optimizer step hooks (torch >= 2.0)
fire for every torch.optim.Optimizer, also those that DeepSpeed, Megatron, accelerate and
Lightning wrap, and only when the optimizer really steps, so a step holds all its
micro-batches. Each recorded step is an NVTX range "step N"; each optimizer step in it an NVTX
mark "nsysgen optimizer step N <Class>#<i>[ skipped][ | <counter> = <value>]", and the window's
numbering one mark "nsysgen numbering per_step=<k> checked=<n> <source>=<text>", from which
`nsysgen verify` proves what each range holds.

The running program has the last word on numbering. Before the window opens the helper reads,
at every optimizer step, each counter it may number by: the number given to `open()` at the top
of a patched loop, NSYSGEN_PROFILE_STEP_EXPR evaluated in the function NSYSGEN_PROFILE_STEP_SCOPE
(what nsysgen found in the script), and the step counter of a library that owns the loop (found
on the stack: the Hugging Face Trainer, Lightning's Trainer, a DeepSpeed engine, an Ignite
Engine), and the step number the program prints or logs (its print() and logging lines). A
counter numbers the steps only if it advanced by exactly one from each training step to the
next before the window; the printed number wins where it did (the others' differing numbers
said), else the first that did, else the helper counts steps itself (from the optimizer's own
step count, which survives a resume, else from 0) and says why on stderr (and in the file
NSYSGEN_HELPER_LOG names, for verify).

How many optimizer steps make one training step (a GAN steps two optimizers) is learned before
the window from the order in which distinct optimizers step (the shortest cycle seen twice), or
given by NSYSGEN_PROFILE_OPTIMIZER_STEPS (capture.optimizer_steps).
"""

from __future__ import annotations

from nsysgen.shipped.step_window.arm import arm, window
from nsysgen.shipped.step_window.counters import (
    Counter,
    ExprCounter,
    HintCounter,
    LibraryCounter,
)
from nsysgen.shipped.step_window.libraries import LIBRARIES, Library
from nsysgen.shipped.step_window.loop import StepWindow
from nsysgen.shipped.step_window.names import (
    FIRST_STEP,
    HINT_COUNTER,
    LAST_STEP,
    NUMBERING_MARK,
    OPTIMIZER_MARK,
    OPTIMIZER_STEPS,
    RANKS,
    STEP_EXPR,
    STEP_SCOPE,
    VARIABLES,
)
from nsysgen.shipped.step_window.numbering import Numbering, period

# The docstring above is the shipped file's. nsysgen writes this package as ONE standard-library
# file (shipped/assemble.py): these modules in this order, each after the ones it imports. The
# window is one class built up by job: its state and messages, its steps, the optimizer hooks,
# the loop's top.
PARTS = (
    "names",
    "libraries",
    "counters",
    "printed",
    "numbering",
    "probes",
    "state",
    "steps",
    "hooks",
    "loop",
    "arm",
)

__all__ = [
    "FIRST_STEP",
    "HINT_COUNTER",
    "LAST_STEP",
    "LIBRARIES",
    "NUMBERING_MARK",
    "OPTIMIZER_MARK",
    "OPTIMIZER_STEPS",
    "RANKS",
    "STEP_EXPR",
    "STEP_SCOPE",
    "VARIABLES",
    "Counter",
    "ExprCounter",
    "HintCounter",
    "Library",
    "LibraryCounter",
    "Numbering",
    "StepWindow",
    "arm",
    "period",
    "window",
]
