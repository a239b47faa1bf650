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
on the stack: the Hugging Face Trainer, Lightning's Trainer, a DeepSpeed engine). A counter
numbers the steps only if it advanced by exactly one from each training step to the next before
the window; the first that did wins, else the helper counts steps itself (from the optimizer's
own step count, which survives a resume, else from 0) and says why on stderr.

How many optimizer steps make one training step (a GAN steps two optimizers) is learned before
the window from the order in which distinct optimizers step (the shortest cycle seen twice), or
given by NSYSGEN_PROFILE_OPTIMIZER_STEPS (capture.optimizer_steps).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at run time: this file loads in every process
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import FrameType, ModuleType
    from typing import Any

FIRST_STEP = "NSYSGEN_PROFILE_FIRST_STEP"
LAST_STEP = "NSYSGEN_PROFILE_LAST_STEP"
RANKS = "NSYSGEN_PROFILE_RANKS"
OPTIMIZER_STEPS = "NSYSGEN_PROFILE_OPTIMIZER_STEPS"
STEP_EXPR = "NSYSGEN_PROFILE_STEP_EXPR"
STEP_SCOPE = "NSYSGEN_PROFILE_STEP_SCOPE"
VARIABLES = (FIRST_STEP, LAST_STEP, RANKS, OPTIMIZER_STEPS, STEP_EXPR, STEP_SCOPE)
OPTIMIZER_MARK = "nsysgen optimizer step"
NUMBERING_MARK = "nsysgen numbering"
HINT_COUNTER = "the number given to window.open() at the top of the patched loop"
# Optimizer steps seen before the order of several optimizers must have shown its cycle twice.
LEARN_LIMIT = 64


class Library:
    """A library that owns the training loop, and the step number its logs give an optimizer
    step: read from the library's object on the stack while the optimizer steps."""

    __slots__ = ("name", "modules", "cls", "path", "offset")

    def __init__(
        self, name: str, modules: tuple[str, ...], cls: str, path: tuple[str, ...], offset: int
    ) -> None:
        self.name, self.modules, self.cls, self.path, self.offset = name, modules, cls, path, offset

    @property
    def counter(self) -> str:
        """The counter in words, as the helper, plan and verify say it."""
        value = ".".join(self.path) + (f" + {self.offset}" if self.offset else "")
        return f"{value} ({self.name})"

    def owns(self, obj: object) -> bool:
        return any(
            c.__name__ == self.cls and c.__module__.startswith(self.modules)
            for c in type(obj).__mro__
        )

    def read(self, obj: object) -> int:
        value: Any = obj
        for name in self.path:
            value = getattr(value, name)
        return int(value) + self.offset


# In the order they are preferred when several are on the stack (the Trainer of transformers
# may drive a DeepSpeed engine: its own log numbers the steps). Each library's step semantics,
# from its code: transformers' Trainer increments state.global_step right after the optimizer
# steps and logs that value; Lightning's trainer.global_step counts optimizer steps completed,
# which its loggers write for the step under way; DeepSpeed's engine increments global_steps
# after the optimizer step and prints that value.
LIBRARIES = (
    Library("transformers Trainer", ("transformers.",), "Trainer", ("state", "global_step"), 1),
    Library(
        "Lightning Trainer",
        ("lightning.pytorch.", "pytorch_lightning."),
        "Trainer",
        ("global_step",),
        0,
    ),
    Library("DeepSpeed engine", ("deepspeed.",), "DeepSpeedEngine", ("global_steps",), 1),
)


class Counter:
    """A step number the program keeps, read at each optimizer step (None: not readable)."""

    name = ""
    broken = ""  # why it can never be read again (an expression that raised)

    def read(self, frame: FrameType | None) -> int | None:
        raise NotImplementedError


class HintCounter(Counter):
    """The number the patched loop gives open() at the top of each iteration."""

    name = HINT_COUNTER

    def __init__(self) -> None:
        self.value: int | None = None
        self.given = False  # the patched loop gives a number at all (else: the helper counts)

    def read(self, frame: FrameType | None) -> int | None:
        return self.value


class ExprCounter(Counter):
    """An expression nsysgen found in the script, evaluated in the step loop's function."""

    def __init__(self, expr: str, scope: str) -> None:
        self.expr, self.scope = expr, scope
        self.file, _, self.function = scope.rpartition(":")
        self.name = f"{expr} in {scope}"

    def read(self, frame: FrameType | None) -> int | None:
        while frame is not None:
            code = frame.f_code
            name = code.co_filename.replace("\\", "/").rpartition("/")[2]
            if code.co_name == self.function and (not self.file or name == self.file):
                try:
                    return int(eval(self.expr, frame.f_globals, frame.f_locals))  # noqa: S307
                except Exception as error:  # noqa: BLE001 - any failure: not a counter, say why
                    self.broken = f"{self.expr} cannot be read in {self.scope} ({error!r})"
                    return None
            frame = frame.f_back
        return None  # an optimizer step outside the loop's function


class LibraryCounter(Counter):
    """The step counter of the library that owns the loop, found on the stack."""

    def __init__(self) -> None:
        self.library: Library | None = None
        self.name = "the step counter of a library's training loop"

    def read(self, frame: FrameType | None) -> int | None:
        found: dict[int, object] = {}
        while frame is not None:
            owner = frame.f_locals.get("self") if frame.f_code.co_argcount else None
            if owner is not None:
                for index, library in enumerate(LIBRARIES):
                    if index not in found and library.owns(owner):
                        found[index] = owner
            frame = frame.f_back
        if not found:
            return None
        index = min(found)
        library = LIBRARIES[index]
        if self.library is not library:
            self.library, self.name = library, library.counter
        try:
            return library.read(found[index])
        except Exception as error:  # noqa: BLE001 - a library version without the attribute
            self.broken = f"{library.counter} cannot be read ({error!r})"
            return None


def period(order: list[int]) -> int | None:
    """The shortest cycle of the optimizers' order, seen at least twice (None: not yet)."""
    distinct = len(set(order))
    if distinct <= 1:
        return 1
    for length in range(distinct, len(order) // 2 + 1):
        if all(order[i] == order[i - length] for i in range(length, len(order))):
            return length
    return None


class Numbering:
    """Training steps before the window, from the optimizer steps seen: how many optimizer
    steps make one, which counters still count them (checked from step to step) and the
    number of the step that ended last."""

    def __init__(self, counters: list[Counter], per_step: int | None) -> None:
        self.counters = counters
        self.fixed = per_step  # capture.optimizer_steps, else learned
        self.per_step = per_step
        self.frozen = per_step is not None  # learned (or given) for good
        self.irregular = False  # no cycle in the optimizers' order: one optimizer step a step
        self.order: list[int] = []  # which optimizer took each optimizer step, while learning
        # The counters at each optimizer step: all of them while learning, then the step's own.
        self.readings: list[tuple[int | None, ...]] = []
        self.count = 0  # optimizer steps seen
        self.steps = 0  # training steps ended
        self.base: int | None = None  # the optimizer's own step count at the first step
        self.failed = ["" for _ in counters]  # per counter: why it does not count steps
        self.last: list[int | None] = [None for _ in counters]  # each at the last step ended
        self.checked = 0  # step-to-step advances checked

    def add(self, optimizer: int, readings: tuple[int | None, ...]) -> bool:
        """One optimizer step; True when it ends a training step."""
        self.count += 1
        self.readings.append(readings)
        if not self.frozen:
            self._learn(optimizer)
        per_step = self.per_step
        if per_step is None or self.count % per_step:
            return False
        if self.steps < self.count // per_step:  # not judged already by a new cycle's recheck
            self._check(self.readings[-per_step:])
        if self.frozen:
            self.readings.clear()
        return True

    def _learn(self, optimizer: int) -> None:
        self.order.append(optimizer)
        learned = self.per_step
        order = self.order
        if learned is None or (len(order) > learned and order[-1] != order[-1 - learned]):
            learned = period(order)
        if self.count >= LEARN_LIMIT:
            self.frozen, self.order = True, []
            if learned is None:
                learned, self.irregular = 1, True
        if learned != self.per_step:
            self.per_step = learned
            self._recheck()
        if self.frozen and learned is not None:
            # From here on only the step under way is judged: keep the last step's readings.
            self.readings = self.readings[-learned:]

    def _recheck(self) -> None:
        """The cycle changed: judge every step seen so far again."""
        self.failed = ["" for _ in self.counters]
        self.last = [None for _ in self.counters]
        self.steps = self.checked = 0
        per_step = self.per_step
        if per_step is None:
            return
        for start in range(0, len(self.readings) - per_step + 1, per_step):
            self._check(self.readings[start : start + per_step])

    def _check(self, group: list[tuple[int | None, ...]]) -> None:
        """A training step ended: does each counter still count steps?"""
        step = self.steps
        self.steps += 1
        for index, counter in enumerate(self.counters):
            if self.failed[index]:
                continue
            values = {reading[index] for reading in group}
            value, last = group[0][index], self.last[index]
            if counter.broken:
                self.failed[index] = counter.broken
            elif value is None or None in values:
                self.failed[index] = f"{counter.name} could not be read at training step {step}"
            elif len(values) > 1:
                seen = ", ".join(str(v) for v in sorted(v for v in values if v is not None))
                self.failed[index] = (
                    f"{counter.name} changed within one training step of {len(group)} "
                    f"optimizer steps ({seen})"
                )
            elif last is not None and value != last + 1:
                self.failed[index] = (
                    f"{counter.name} went from {last} to {value} from one training step to the "
                    "next (a step counter advances by exactly 1)"
                )
            self.last[index] = value
        self.checked = step

    def chosen(self) -> int | None:
        """The counter that numbers the steps (its index), None: the helper's own count."""
        return next((i for i, failed in enumerate(self.failed) if not failed), None)

    def number_of_last(self) -> int:
        """The number of the training step that ended last."""
        index = self.chosen()
        value = None if index is None else self.last[index]
        return (self.base or 0) + self.steps - 1 if value is None else value

    def may_open(self, number: int, first: int) -> bool:
        """The step about to begin, numbered `number`, may open the window at FIRST: a counter
        seen at one step only, which jumps past FIRST while the helper's own count has not
        reached it, waits for the next step to be checked (a micro-batch counter does so)."""
        if number < first:
            return False
        unchecked = self.chosen() is not None and self.steps < 2
        return not unchecked or (self.base or 0) + self.steps >= first

    def fallback_reason(self) -> str:
        """Why the counter nsysgen expected does not number the steps ("": none expected)."""
        for index, counter in enumerate(self.counters):
            failed = self.failed[index]
            absent = (isinstance(counter, LibraryCounter) and counter.library is None) or (
                isinstance(counter, HintCounter) and not counter.given
            )
            if failed and not absent:
                return failed
        return ""


class StepWindow:
    """Records training steps FIRST..LAST (both included) with cudaProfilerStart/Stop."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        first = env.get(FIRST_STEP, "").strip()
        last = env.get(LAST_STEP, "").strip()
        per_step = env.get(OPTIMIZER_STEPS, "").strip()
        self.active = False
        self.installed = False
        self.owner: StepWindow | None = None  # another copy of the helper hooked torch first
        self.said: set[str] = set()
        self.patched = False  # open() is called at the loop's top (a training-loop patch)
        self.under_way = False  # patched loop: a step began at open() and has not ended
        self.locked = False  # the numbering is decided (when the window's first step began)
        self.recording = False
        self.done = False
        self.pushed = False  # the step's NVTX range is open (only inside the window)
        self.step: int | None = None  # the number of the step under way, once locked
        self.pending: int | None = None  # patched loop: the number the next open() begins
        self.taken = 0  # optimizer steps taken in the step under way, once locked
        self.seen = 0  # optimizer step() calls seen, skipped ones included
        self.depth = 0  # optimizer steps running inside each other (a wrapper's inner step)
        self.outer: object = None  # the optimizer whose step is running (depth 1)
        self.reading: int | None = None  # the chosen counter at the running optimizer step
        self.readings: tuple[int | None, ...] = ()  # every counter, before the window
        self.ended: int | None = None  # the number of the step that ended last, once locked
        self.source = ""  # how the window's steps are numbered (its numbering mark)
        self.optimizers: dict[int, int] = {}
        self.first = self.last_step = 0
        valid = first.isdigit() and last.isdigit() and (not per_step or per_step.isdigit())
        if not valid or per_step == "0" or (per_step and not int(per_step)):
            return
        ranks = env.get(RANKS, "")
        rank = _number(env, "RANK", "SLURM_PROCID")
        local_rank = _number(env, "LOCAL_RANK", "SLURM_LOCALID")
        self.active = (
            ranks == "all"
            or (ranks == "one_per_node" and local_rank == 0)
            or str(rank) in ranks.split(",")
        )
        self.first, self.last_step = int(first), int(last)
        self.hint = HintCounter()
        counters: list[Counter] = [self.hint]
        expr, scope = env.get(STEP_EXPR, "").strip(), env.get(STEP_SCOPE, "").strip()
        if expr:
            counters.append(ExprCounter(expr, scope))
        counters.append(LibraryCounter())
        self.numbering = Numbering(counters, int(per_step) if per_step else None)

    def _say(self, key: str, text: str) -> None:
        if key in self.said:
            return
        self.said.add(key)
        # contextlib.suppress would import modules into every process: try/except imports none.
        try:  # noqa: SIM105
            print(f"nsysgen: {text}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass  # no stderr (closed, a broken pipe): the message is lost, not the run

    # Installation ------------------------------------------------------------------------

    def install(self) -> None:
        """Hook every optimizer of the process (once torch is imported)."""
        if not self.active or self.installed:
            return
        self.installed = True
        try:
            self._install()
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _install(self) -> None:
        torch = _torch()
        __import__("torch.optim.optimizer")
        # torch.optim deletes its `optimizer` attribute: the module is found in sys.modules.
        optimizer_module: Any = sys.modules["torch.optim.optimizer"]
        if not hasattr(optimizer_module, "register_optimizer_step_post_hook"):
            self._refuse(
                f"torch {getattr(torch, '__version__', '?')} has no global optimizer step hooks "
                "(torch >= 2.0): nothing is recorded"
            )
            return
        owner = getattr(optimizer_module, "_nsysgen_window", None)
        if owner is not None:
            self.owner = owner  # a patched script's own copy of the helper hooked torch first
            return
        optimizer_module._nsysgen_window = self
        optimizer_module.register_optimizer_step_pre_hook(self._pre)
        optimizer_module.register_optimizer_step_post_hook(self._post)
        # GradScaler.step skips optimizer.step() on inf/nan gradients: no hook fires, but the
        # iteration is over. Seen from here, the step ends anyway, marked "skipped".
        amp = getattr(torch, "amp", None)
        cuda_amp = getattr(getattr(torch, "cuda", None), "amp", None)
        for scaler in (getattr(amp, "GradScaler", None), getattr(cuda_amp, "GradScaler", None)):
            if scaler is not None and "step" in vars(scaler):
                scaler.step = self._scaler_step(scaler.step)
        import atexit

        atexit.register(self._at_exit)

    def _scaler_step(self, step: Callable[..., Any]) -> Callable[..., Any]:
        window = self

        def scaler_step(scaler: object, optimizer: object, *args: Any, **kwargs: Any) -> Any:
            seen = window.seen
            result = step(scaler, optimizer, *args, **kwargs)
            if window.active and window.seen == seen and window.depth == 0:
                window._pre(optimizer, args, kwargs)
                window._post(optimizer, args, kwargs, skipped=True)
            return result

        return scaler_step

    # The loop's top (training-loop patch) ------------------------------------------------

    def open(self, step: int | None = None) -> None:
        """Top of an iteration of the step loop: a step begins unless one is under way."""
        if not self.active:
            return
        self.install()
        if self.owner is not None:
            self.owner.open(step)
            return
        try:
            self._open(step)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _open(self, step: int | None) -> None:
        self.patched = True
        self.hint.value = step if isinstance(step, int) else None
        self.hint.given = self.hint.given or self.hint.value is not None
        if self.under_way or self.done:
            return
        self.under_way = True
        numbering = self.numbering
        if not self.locked:
            # The loop's top says which step begins: the window opens with it, not after it.
            if not numbering.failed[0] and self.hint.value is not None:
                number = self.hint.value
            else:
                number = numbering.number_of_last() + 1 if numbering.steps else 0
            if not numbering.may_open(number, self.first):
                return
            self.locked = True
            self._say_numbering(number)
        elif numbering.chosen() == 0 and self.hint.value is not None:
            number = self.hint.value
        else:
            number = self.first if self.pending is None else self.pending
        self._begin(number)

    begin = open  # the name of earlier releases

    def attach(self, trainer: Any) -> None:
        """Where a library owns the loop (training-loop.patch calls this before `.train()` or
        `.fit()`): a callback of the library opens each step at its start, numbered as the
        library logs it. The Hugging Face Trainer's `on_step_begin` (before the step's first
        micro-batch) opens `state.global_step + 1`; Lightning's `on_train_batch_start` opens
        `trainer.global_step` (a micro-batch of the same step opens nothing new)."""
        if not self.active:
            return
        try:
            self._attach(trainer)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _attach(self, trainer: Any) -> None:
        window = self
        modules = {c.__module__.partition(".")[0] for c in type(trainer).__mro__}
        if "transformers" in modules:
            base: Any = __import__("transformers").TrainerCallback

            class HuggingFaceSteps(base):  # type: ignore[misc]
                def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                    window.open(state.global_step + 1)

            trainer.add_callback(HuggingFaceSteps())
            return
        package = next((m for m in ("lightning", "pytorch_lightning") if m in modules), None)
        if package is None:
            names = ", ".join(sorted(modules))
            raise TypeError(f"no step callback for a trainer of {names}")
        callbacks = __import__(f"{package}.pytorch" if package == "lightning" else package)
        callback: Any = (callbacks.pytorch if package == "lightning" else callbacks).Callback

        class LightningSteps(callback):  # type: ignore[misc]
            def on_train_batch_start(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
                window.open(trainer.global_step)

        trainer.callbacks.append(LightningSteps())

    def end(self, ended: bool = True) -> None:
        """Earlier releases ended steps here; now the optimizer step ends them."""

    def close(self) -> None:
        """Earlier releases ended steps here; now the optimizer step ends them."""

    # Optimizer steps ---------------------------------------------------------------------

    def _pre(self, optimizer: object, args: object, kwargs: object) -> None:
        try:
            self._pre_step(optimizer)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _post(self, optimizer: object, args: object, kwargs: object, skipped: bool = False) -> None:
        try:
            self._post_step(optimizer, skipped)
        except Exception as error:  # noqa: BLE001 - the helper must never stop the training
            self._fail(error)

    def _pre_step(self, optimizer: object) -> None:
        if self.depth and optimizer is self.outer:
            self.depth = 0  # its last step raised (an OOM the script caught): no post hook ran
        self.depth += 1
        if self.depth > 1 or not self.active or self.done:
            return
        self.outer = optimizer
        self.seen += 1
        torch = _torch()
        if _in_backward(torch):
            self._refuse(
                "an optimizer steps inside backward (optimizer-in-backward): its steps cannot "
                "be told apart from gradient hooks; nothing is recorded (use capture=window or "
                "capture=nvtx for this script)"
            )
            return
        if _capturing(torch):
            self._refuse(
                "an optimizer step is being captured into a CUDA graph (torch.cuda.graph): its "
                "replays run no optimizer step in Python, so the helper cannot see steps; "
                "nothing is recorded (use capture=window or capture=nvtx for this script)"
            )
            return
        frame = sys._getframe(1)
        numbering = self.numbering
        if not self.locked:
            if numbering.base is None:
                numbering.base = _state_step(optimizer) or 0
            self.readings = tuple(counter.read(frame) for counter in numbering.counters)
        elif self.recording:
            index = numbering.chosen()
            self.reading = None if index is None else numbering.counters[index].read(frame)

    def _post_step(self, optimizer: object, skipped: bool) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth or not self.active or self.done:
            return
        index = self.optimizers.setdefault(id(optimizer), len(self.optimizers))
        if self.recording:
            self._mark(optimizer, index, skipped)
        if not self.locked:
            # Every optimizer step counts while the cycle of optimizers is learned: one that
            # ends a step early under a cycle not known yet is still the loop's.
            if self.numbering.add(index, self.readings):
                self._ended_before_window()
            return
        if self.patched and not self.under_way:
            return  # outside the patched loop (an evaluation or warm-up step, say)
        self.taken += 1
        if self.taken >= (self.numbering.per_step or 1):
            self._end()

    def _mark(self, optimizer: object, index: int, skipped: bool) -> None:
        number = self.step if self.step is not None else self.numbering.number_of_last()
        label = f"{OPTIMIZER_MARK} {number} {type(optimizer).__name__}#{index}"
        label += " skipped" if skipped else ""
        chosen = self.numbering.chosen()
        if chosen is not None and self.reading is not None:
            label += f" | {self.numbering.counters[chosen].name} = {self.reading}"
        _torch().cuda.nvtx.mark(label)

    # Steps -------------------------------------------------------------------------------

    def _ended_before_window(self) -> None:
        """A training step ended before the window: open it if the next step is FIRST (a
        patched loop opens it at the top of the loop instead)."""
        self.under_way = False
        numbering = self.numbering
        if self.patched:
            return
        following = numbering.number_of_last() + 1
        if not numbering.may_open(following, self.first):
            return
        self.locked = True
        self._say_numbering(following)
        if numbering.steps == 1 and numbering.number_of_last() >= self.first:
            last = numbering.number_of_last()
            self._say(
                "first",
                f"step {last} began before the first optimizer step was seen; the window "
                f"cannot open before step {following}",
            )
        self._begin(following)

    def _say_numbering(self, following: int) -> None:
        numbering = self.numbering
        per_step = numbering.per_step or 1
        if numbering.fixed is None and per_step > 1:
            self._say(
                "per_step",
                f"{per_step} optimizer steps make one training step (the cycle of "
                f"{len(set(numbering.order))} optimizers seen before step {following})",
            )
        index = numbering.chosen()
        if index is not None:
            counter = numbering.counters[index].name
            checked = (
                f"checked over the {numbering.steps} training steps before step {following}"
                if numbering.checked
                else f"not checked: only one training step came before step {following}"
            )
            self._say("numbering", f"steps are numbered by {counter} ({checked})")
            self.source = f"counter={counter}"
            return
        own = (
            "the optimizer's own step count (read at the first step, then counted)"
            if numbering.base
            else "nsysgen's count of training steps (from 0 in this process)"
        )
        reason = numbering.fallback_reason()
        if numbering.irregular:
            reason = reason or (
                f"the {len(self.optimizers)} optimizers step in no regular order: one optimizer "
                "step makes one training step"
            )
        if reason:
            self._say("numbering", f"{reason}: steps are numbered by {own} instead")
            self.source = f"fallback={reason}: numbered by {own}"
        else:
            self._say("numbering", f"steps are numbered by {own}")
            self.source = f"count={own}"

    def _begin(self, step: int) -> None:
        torch = _torch()
        if step > self.last_step:
            self._say(
                "past",
                f"the first step seen here is {step}, past the window "
                f"{self.first}..{self.last_step}: nothing is recorded",
            )
            self.done = True
            return
        if not self.recording and self.first <= step:
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            self.recording = True
            numbering = self.numbering
            torch.cuda.nvtx.mark(
                f"{NUMBERING_MARK} per_step={numbering.per_step or 1} "
                f"checked={numbering.checked} {self.source}"
            )
        # Ranges only inside the window: in a session that records several processes (one
        # torchrun per node), another rank may still be recording this one's next step.
        self.pushed = self.recording
        if self.pushed:
            torch.cuda.nvtx.range_push(f"step {step}")
        self.step, self.taken, self.reading = step, 0, None

    def _end(self) -> None:
        torch = _torch()
        if self.pushed:
            self.pushed = False
            torch.cuda.nvtx.range_pop()
        # The program's counter says which step this was: the next one follows it.
        number = self.step if self.reading is None else self.reading
        self.step, self.under_way, self.ended = None, False, number
        if self.recording and number is not None and number >= self.last_step:
            # Kernels still in flight belong to the window: wait for them before stopping.
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            self.recording = False
            self.done = True
            return
        following = (number if number is not None else self.first) + 1
        if self.patched:
            self.pending = following
        else:
            self._begin(following)

    def _refuse(self, reason: str) -> None:
        self._say("refused", reason)
        self.active = False
        self.done = True
        torch = _torch()
        self.step = None
        if self.pushed:  # popped while the capture still records, so that the range ends
            self.pushed = False
            torch.cuda.nvtx.range_pop()
        if self.recording:
            self.recording = False
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()

    def _fail(self, error: BaseException) -> None:
        """A failure of the helper itself: the training goes on, without a window."""
        try:  # noqa: SIM105
            self._refuse(f"the step helper stopped ({error!r}): the window is not recorded")
        except Exception:  # noqa: BLE001, S110 - nothing more can be done for the window
            pass

    def _at_exit(self) -> None:
        try:  # noqa: SIM105
            self._exit_message()
        except Exception:  # noqa: BLE001, S110 - at exit: nothing left to protect but the exit
            pass

    def _exit_message(self) -> None:
        if not self.active:
            return
        if self.recording:
            # The last step that ended is the last one whole; the one begun after it is not.
            ended = self.ended
            held = (
                f"steps {self.first}..{ended} only"
                if ended is not None and ended >= self.first
                else "no whole step"
            )
            self._say(
                "short",
                f"the run ended after step {ended}, before step {self.last_step}: the window "
                f"holds {held}",
            )
        elif self.seen == 0 and _trains():
            self._say(
                "none",
                "no optimizer step was seen in this process (no torch.optim optimizer stepped, "
                "or its step is compiled without hooks): the window never opened",
            )
        elif not self.locked and self.seen:
            numbering = self.numbering
            self._say(
                "never",
                f"the run ended after {numbering.steps} training steps "
                f"({self.seen} optimizer steps), before step {self.first}: the window never "
                "opened",
            )


def _number(env: Mapping[str, str], *names: str) -> int:
    # Launchers leave rank variables empty or unset; neither may stop the training.
    for name in names:
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def _torch() -> ModuleType:
    return sys.modules["torch"] if "torch" in sys.modules else __import__("torch")


def _in_backward(torch: Any) -> bool:
    current = getattr(getattr(torch, "_C", None), "_current_graph_task_id", None)
    return current is not None and current() != -1


def _capturing(torch: Any) -> bool:
    cuda = getattr(torch, "cuda", None)
    started = getattr(cuda, "is_initialized", None)
    capturing = getattr(cuda, "is_current_stream_capturing", None)
    if started is None or capturing is None or not started():
        return False
    try:
        return bool(capturing())
    except RuntimeError:  # a torch built without CUDA: nothing is ever captured
        return False


def _state_step(optimizer: Any) -> int | None:
    # Adam, AdamW and fused variants count steps per parameter (or per group); the count
    # before this step is the number of steps taken, restored by load_state_dict.
    try:
        for group in optimizer.param_groups:
            if "step" in group and group["step"] is not None:
                return int(group["step"])
            for param in group["params"]:
                state = optimizer.state.get(param)
                if state and "step" in state:
                    return int(state["step"])
                return None
    except (AttributeError, KeyError, TypeError, ValueError, RuntimeError):
        return None
    return None


def _trains() -> bool:
    # A launcher (torchrun's agent, deepspeed's) imports torch but never starts CUDA.
    started = getattr(getattr(_torch(), "cuda", None), "is_initialized", None)
    return started is None or bool(started())


window = StepWindow()
if "torch.optim.optimizer" in sys.modules:
    # Imported by a patched script, after its own imports: hook the optimizers now, so that
    # optimizer steps before the loop's first open() (a warm-up, a CUDA graph's capture) count.
    window.install()


def arm() -> None:
    """Zero-patch: hook the optimizers once torch is imported (sitecustomize calls this)."""
    if getattr(sys, "_nsysgen_armed", False) or not window.active:
        return  # armed already (another copy of the site folder), or nothing to record here
    sys._nsysgen_armed = True  # type: ignore[attr-defined]
    if "torch" in sys.modules and "torch.optim.optimizer" in sys.modules:
        window.install()
        return
    sys.meta_path.insert(0, _AfterTorch())


class _AfterTorch:
    """Finds nothing itself: wraps the loader of every spec found for torch (a library may look
    torch up without importing it), so that the hooks go in once torch is imported whole
    (torch.optim and torch.amp included); leaves when they are in."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        if name != "torch" or window.installed:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            mine = type(finder).__name__ == "_AfterTorch"  # this one, or another copy's
            spec = find(name, path, target) if find and not mine else None
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec
        finder = self

        def exec_module(module: ModuleType) -> None:
            run(module)
            window.install()
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)

        spec.loader.exec_module = exec_module
        return spec
