"""Workload kinds: one registry entry each (settings, program, what it can do), in `WORKLOADS`.

A kind's entry says how its `workload.<kind>` block is typed, the program it runs, whether its
steps can start and stop the capture (cudaProfilerStart/Stop), whether its ranks talk through
NCCL, and which launch shapes it supports. Nothing outside this module names a workload kind
(the EKS target runs torchrun jobs, and says so itself).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nsysgen.model import Block, Config, Launch, WorkloadSettings, settings_as
from nsysgen.output.render import ShellExpr
from nsysgen.profile.ranks import explicit_ranks
from nsysgen.shipped import STEP_WINDOW_FILE
from nsysgen.shipped.step_window import LIBRARIES

NEMO_OVERRIDES_FILE = "nemo-overrides.txt"
WINDOW_HELPER_FILE = STEP_WINDOW_FILE
PATCH_FILE = "training-loop.patch"
# The zero-patch helper: its folder goes first on the program's PYTHONPATH.
SITE_DIR = "nsysgen-site"
SITE_FILE = f"{SITE_DIR}/sitecustomize.py"
SITE_HELPER_FILE = f"{SITE_DIR}/{STEP_WINDOW_FILE}"


@dataclass(frozen=True)
class LaunchShell:
    """What a launcher reads from the target's job at run time, as shell expressions."""

    nnodes: str  # the number of nodes of the job
    job_id: str  # an id unique to the job
    head_node: str  # the host of the first node


@dataclass(frozen=True)
class NcclSettings(WorkloadSettings):
    binary: str
    build_dir: str
    min_bytes: str
    max_bytes: str
    step_factor: int
    iterations: int
    check: int


@dataclass(frozen=True)
class NemoSettings(WorkloadSettings):
    script: str
    config_path: str
    config_name: str
    overrides: tuple[str, ...]


@dataclass(frozen=True)
class MegatronSettings(WorkloadSettings):
    script: str
    rdzv_port: int
    args: tuple[str, ...]


@dataclass(frozen=True)
class BridgeSettings(WorkloadSettings):
    script: str
    recipe: str
    rdzv_port: int
    overrides: tuple[str, ...]


@dataclass(frozen=True)
class SourceSettings(WorkloadSettings):
    """A workload whose training script nsysgen may read (capture=steps): its step loop and
    the counter that numbers its steps, read by the step helper while the program runs."""

    source: str | None  # the script in this repository (nsysgen.profile.inputs reads it)
    loop_line: int | None
    step_expr: str | None


@dataclass(frozen=True)
class ScriptSettings(SourceSettings):
    """A script the workload runs, whose source may be patched for capture=steps."""

    script: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class FsdpSettings(ScriptSettings):
    rdzv_port: int


@dataclass(frozen=True)
class PythonSettings(ScriptSettings):
    interpreter: str


@dataclass(frozen=True)
class CommandSettings(SourceSettings):
    """Any program and its arguments: a launcher (torchrun, deepspeed, mpirun), a shell
    script, a binary, as the user's job runs it; `source` the training script it runs, whose
    counter numbers the steps (read, never patched: the command is the user's)."""

    argv: tuple[str, ...]


def typed_block(kind: type[Any], block: Block) -> Any:
    """A frozen settings dataclass from its schema-valid block (lists become tuples)."""
    values = {}
    for item in dataclasses.fields(kind):
        # A key that may be null may be left out (a --config-dir file older than the key).
        optional = isinstance(item.type, str) and item.type.endswith("| None")
        value = block.get(item.name) if optional else block[item.name]
        values[item.name] = tuple(value) if isinstance(value, list) else value
    return kind(**values)


@dataclass(frozen=True)
class Program:
    command: tuple[str, ...]
    # Environment the launch exports for the program (the step window of patched loops).
    env: tuple[tuple[str, str], ...] = ()
    needs_head_node: bool = False
    # The launch puts the folder's SITE_DIR first on PYTHONPATH (the zero-patch helper).
    site: bool = False
    # Extra files of the folder that go with the program (overrides, patch, helper).
    files: tuple[str, ...] = field(default=())


def step_method(config: Config) -> str | None:
    """How the steps of capture=steps are recorded: hook, patch or native (None: not steps)."""
    if config.capture.mode != "steps":
        return None
    methods = workload_kind(config).step_methods
    chosen = config.capture.step_method or "auto"
    if chosen == "auto":
        return methods[0] if methods else None
    return chosen


def step_window_env(config: Config) -> tuple[tuple[str, str], ...]:
    """Variables the step helper reads; one patch or helper serves every sweep point."""
    capture = config.capture
    method = step_method(config)
    if method is None or not marks_steps(config):
        return ()  # a framework's own window reads its arguments, not these
    env = [
        ("NSYSGEN_PROFILE_FIRST_STEP", str(capture.first_step)),
        ("NSYSGEN_PROFILE_LAST_STEP", str(capture.last_step)),
        ("NSYSGEN_PROFILE_RANKS", window_ranks(config)),
    ]
    if (capture.optimizer_steps or 1) != 1:
        env.append(("NSYSGEN_PROFILE_OPTIMIZER_STEPS", str(capture.optimizer_steps)))
    source, native = config.training_patch, workload_kind(config).native
    if method == "hook" and source is not None and source.at_step is not None:
        # The script's own counter, read where the step loop runs while the optimizer steps.
        env += [
            ("NSYSGEN_PROFILE_STEP_EXPR", source.at_step),
            ("NSYSGEN_PROFILE_STEP_SCOPE", source.scope),
        ]
    elif method == "hook" and native is not None and native.at_step is not None:
        env += [
            ("NSYSGEN_PROFILE_STEP_EXPR", native.at_step),
            ("NSYSGEN_PROFILE_STEP_SCOPE", native.scope),
        ]
    return tuple(env)


# The step methods of the helper, in words (plan, compile output, README).
METHOD_TEXT = {
    "hook": "hook (zero-patch: the launch puts nsysgen's helper on PYTHONPATH; steps end at "
    "the optimizer step)",
    "patch": "patch (training-loop.patch: one line at the loop's top; steps end at the "
    "optimizer step)",
}


def step_detection(config: Config) -> tuple[tuple[str, str], ...]:
    """What nsysgen found about the steps, before the run: for plan, compile and the README."""
    method = step_method(config)
    if method is None:
        return ()
    source = config.training_patch
    native = workload_kind(config).native
    if method == "native" and native is not None and source is None:
        return (("method", native.method), ("step number", native.numbering))
    if source is not None:
        found = source.detected
    elif method == "hook" and native is not None and native.at_step is not None:
        read = f"{native.at_step} in {native.scope}: {native.numbering}"
        found = (("method", METHOD_TEXT["hook"]), ("step number", read))
    elif method == "hook":
        found = (("method", METHOD_TEXT["hook"]), ("step number", _counted(config)))
    else:
        found = (
            (
                "method",
                f"patch by hand ({WINDOW_HELPER_FILE}: window.open(step) at the loop's top)",
            ),
            ("step number", "the number given to window.open(step), else " + _counted(config)),
        )
    return (*found, ("checked", _checked(config)))


def _counted(config: Config) -> str:
    libraries = "; ".join(library.counter for library in LIBRARIES)
    counted = (
        f"a library's counter where one owns the loop ({libraries}), read at run time; else "
        "the optimizer's own count (Adam's state 'step', which a resumed run restores), else "
        "nsysgen's count from 0: step N is the optimizer step taken after N steps"
    )
    if isinstance(config.workload.settings, SourceSettings):
        kind = config.workload.kind
        counted += f" (set workload.{kind}.source to number steps by the script's own counter)"
    return counted


def _checked(config: Config) -> str:
    """The run-time check of the counter, in the helper's words."""
    first = config.capture.first_step
    rule = (
        "the helper numbers by a counter only if it advanced by exactly 1 from each training "
        f"step to the next before step {first}; else by its own count, saying why on stderr "
        "and in the report (nsysgen verify shows it)"
    )
    if first is not None and first < 3:
        rule += (
            f"; with capture.first_step={first}, fewer than 2 training steps come before the "
            "window: a counter cannot be checked (a later first_step lets it)"
        )
    return rule


def marks_steps(config: Config) -> bool:
    """nsysgen's step helper runs in the program and marks each optimizer step."""
    return step_method(config) == "patch" or uses_site(config)


def uses_site(config: Config) -> bool:
    """The zero-patch helper is on the program's PYTHONPATH."""
    return step_method(config) == "hook"


def window_ranks(config: Config) -> str:
    """The ranks that start and stop the capture, as the patched loop reads them.

    With one torchrun per node, one nsys session holds every worker of the node, and a
    cudaProfilerStart/Stop from any worker starts/stops the capture of all of them (measured on
    2 x H200: with rank 0 alone calling them, rank 1's steps were cut short). So every worker of
    a recorded node marks the window, and each of them is recorded exactly.
    """
    ranks = config.capture.ranks
    if not isinstance(ranks, tuple):
        return "all" if config.workload.launch == "per_node" else ranks
    if config.workload.launch == "per_gpu":
        return ",".join(map(str, ranks))
    gpus = config.cluster.gpus_per_node
    nodes = sorted({rank // gpus for rank in ranks})
    if len(nodes) == config.cluster.nodes:
        return "all"
    return ",".join(str(node * gpus + local) for node in nodes for local in range(gpus))


def nemo_overrides(config: Config) -> list[str]:
    """NeMo 1.x Hydra overrides: the workload's own, then model.nsys_profile for the window."""
    overrides = list(settings_as(config.workload.settings, NemoSettings).overrides)
    capture = config.capture
    if capture.mode == "steps":
        ranks = ",".join(map(str, explicit_ranks(config)))
        overrides += [
            "model.nsys_profile.enabled=true",
            f"model.nsys_profile.start_step={capture.first_step}",
            f"model.nsys_profile.end_step={capture.last_step}",
            f"model.nsys_profile.ranks=[{ranks}]",
            "model.nsys_profile.gen_shape=false",
        ]
    else:
        # The window comes from nsys itself (delay/duration or NVTX), not from NeMo's callback.
        overrides.append("model.nsys_profile.enabled=false")
    return overrides


def _nccl(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, NcclSettings)
    return Program(
        command=(
            f"{s.build_dir}/{s.binary}",
            "-b",
            s.min_bytes,
            "-e",
            s.max_bytes,
            "-f",
            str(s.step_factor),
            # One GPU per task: the launch starts one task per GPU.
            "-g",
            "1",
            "-c",
            str(s.check),
            "-n",
            str(s.iterations),
        )
    )


def _nemo(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, NemoSettings)
    return Program(
        command=(
            "python3",
            "-u",
            s.script,
            f"--config-path={s.config_path}",
            f"--config-name={s.config_name}",
            ShellExpr("${nemo_overrides[@]}"),
        ),
        files=_nemo_files(config),
    )


def _step_files(config: Config) -> tuple[str, ...]:
    """With capture=steps: the zero-patch helper, a patch for the workload's own script, or the
    helper to use by hand."""
    method = step_method(config)
    if method is None:
        return ()
    if uses_site(config):
        return (SITE_FILE, SITE_HELPER_FILE)
    if method != "patch":
        return ()
    source = settings_as(config.workload.settings, ScriptSettings).source
    return (PATCH_FILE,) if source else (WINDOW_HELPER_FILE,)


def _torchrun(config: Config, shell: LaunchShell, port: int) -> tuple[str, ...]:
    """One torchrun per node, rendezvous on the job's head node."""
    return (
        "torchrun",
        f"--nproc_per_node={config.cluster.gpus_per_node}",
        ShellExpr(f"--nnodes={shell.nnodes}"),
        ShellExpr(f"--rdzv_id={shell.job_id}"),
        "--rdzv_backend=c10d",
        ShellExpr(f"--rdzv_endpoint={shell.head_node}:{port}"),
    )


def _fsdp(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, FsdpSettings)
    return Program(
        command=(*_torchrun(config, shell, s.rdzv_port), s.script, *s.args),
        env=step_window_env(config),
        needs_head_node=True,
        site=uses_site(config),
        files=_step_files(config),
    )


def _native_window(config: Config) -> tuple[int, int, tuple[int, ...] | None] | None:
    """Megatron's (start, end, ranks) for steps FIRST..LAST as its log numbers iterations.

    Megatron-LM and Megatron Bridge call cudaProfilerStart at the top of the iteration that
    begins when `iteration == start` (completed iterations, before the increment), and
    cudaProfilerStop after the iteration where the incremented counter equals `end`; their log
    prints the incremented counter. So the iterations logged start+1..end are recorded:
    start = FIRST - 1, end = LAST. Ranks: every worker of a recorded node (one nsys per node
    records all of them); None when that is every rank (the framework's empty list).
    """
    if step_method(config) != "native":
        return None
    capture = config.capture
    ranks = window_ranks(config)
    listed = None if ranks == "all" else tuple(int(r) for r in ranks.split(","))
    return (capture.first_step or 0) - 1, capture.last_step or 0, listed


def megatron_args(config: Config) -> tuple[str, ...]:
    window = _native_window(config)
    if window is None:
        return ()
    start, end, ranks = window
    args = ["--profile", f"--profile-step-start={start}", f"--profile-step-end={end}"]
    if ranks is not None:
        # nargs="+": the ranks follow as separate words; Megatron core >= 0.17 records every
        # rank without the option, older releases rank 0 only.
        args += ["--profile-ranks", *map(str, ranks)]
    return tuple(args)


def bridge_overrides(config: Config) -> tuple[str, ...]:
    window = _native_window(config)
    if window is None:
        return ()
    start, end, ranks = window
    listed = ",".join(map(str, ranks)) if ranks is not None else ""
    return (
        "profiling.use_nsys_profiler=true",
        f"profiling.profile_step_start={start}",
        f"profiling.profile_step_end={end}",
        # Megatron Bridge >= 0.5 (NeMo Framework 26.06): an empty list records every rank.
        f"profiling.profile_ranks=[{listed}]",
    )


def _megatron(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, MegatronSettings)
    return Program(
        command=(*_torchrun(config, shell, s.rdzv_port), s.script, *s.args, *megatron_args(config)),
        env=step_window_env(config),
        needs_head_node=True,
        site=uses_site(config),
        files=_step_files(config),
    )


def _bridge(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, BridgeSettings)
    return Program(
        command=(
            *_torchrun(config, shell, s.rdzv_port),
            s.script,
            f"--recipe={s.recipe}",
            *s.overrides,
            *bridge_overrides(config),
        ),
        env=step_window_env(config),
        needs_head_node=True,
        site=uses_site(config),
        files=_step_files(config),
    )


def _python(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, PythonSettings)
    return Program(
        command=(s.interpreter, s.script, *s.args),
        env=step_window_env(config),
        site=uses_site(config),
        files=_step_files(config),
    )


def _command(config: Config, shell: LaunchShell) -> Program:
    s = settings_as(config.workload.settings, CommandSettings)
    return Program(
        command=s.argv,
        env=step_window_env(config),
        site=uses_site(config),
        files=_step_files(config),
    )


@dataclass(frozen=True)
class StepRanges:
    """How a report shows which training steps a step window holds (what verify checks)."""

    regex: str  # the NVTX range name of one step
    numbered: bool  # group 1 of regex is the step's number; else one range per step, unnumbered
    unopened: str  # the likely cause when the window never opened, other than a short job
    unmarked: str | None = None  # why a report may hold no such range though the window opened


# nsysgen's step helper and training-loop patch name each step's NVTX range "step N".
HELPER_STEPS = StepRanges(
    regex=r"step (\d+)",
    numbered=True,
    unopened="the step helper is not in the training loop, or NSYSGEN_PROFILE_* are not exported",
)
# NeMo opens and closes the window itself (model.nsys_profile). Its steps have no NVTX range of
# their own; with gen_shape=true it turns on torch's emit_nvtx, and then every optimizer step is
# a range "Optimizer.step#<optimizer>.step, op_id = N" (seen with nsys 2025.3.1, torch 2.11).
NEMO_STEPS = StepRanges(
    regex=r"Optimizer\.step#[^,]*(?:, .*)?",
    numbered=False,
    unopened="NeMo did not get its model.nsys_profile overrides (nemo-overrides.txt)",
    unmarked=(
        "NeMo marks its steps only with model.nsys_profile.gen_shape=true (torch emit_nvtx): "
        "the window opened, which steps it holds is not checked"
    ),
)


# A program that opens its own cudaProfilerApi window: nsysgen cannot tell its steps.
PROGRAM_STEPS = StepRanges(
    regex=r"(?!)",
    numbered=False,
    unopened="the program never called cudaProfilerStart (cudaProfilerApi window)",
    unmarked=(
        "the program opens and closes the window itself and marks no steps nsysgen knows: the "
        "window opened, which steps it holds is not checked"
    ),
)


@dataclass(frozen=True)
class NativeWindow:
    """A framework that opens the step window itself, in words for plan and the README."""

    method: str  # how its window is asked for
    numbering: str  # what its step N is
    # The helper's counter in the framework's own loop (step_method=hook numbers as it logs).
    at_step: str | None = None
    scope: str = ""
    first: int = 0  # the first step it numbers (Megatron counts iterations from 1)


# Megatron-LM and Megatron Bridge: `iteration` (train_state.step) counts completed iterations
# and is incremented after the optimizer step; the log prints it incremented.
MEGATRON_NUMBERING = (
    "the iteration Megatron logs as `iteration N` (from 1); with step_method=hook the helper reads "
    "the same counter while the optimizer steps"
)
# Megatron's reports hold no range per iteration (its --nvtx-ranges are module ranges).
MEGATRON_STEPS = StepRanges(
    regex=r"(?!)",
    numbered=False,
    unopened="Megatron did not get its --profile arguments, or the rank is not in --profile-ranks",
    unmarked=(
        "Megatron marks no range per iteration: the window opened, which steps it holds is not "
        "checked (capture.step_method=hook marks and proves them)"
    ),
)


@dataclass(frozen=True)
class WorkloadKind:
    settings: Callable[[Block], WorkloadSettings]  # types the workload.<kind> block
    program: Callable[[Config, LaunchShell], Program]
    files: Callable[[Config], tuple[str, ...]]  # the Program's files, without building it
    step_capture: bool  # its steps call cudaProfilerStart/Stop (capture=steps)
    step_ranges: StepRanges | None  # how its reports show the steps (None: no step capture)
    uses_nccl: bool  # its ranks talk through NCCL (the python kind may or may not)
    launches: tuple[Launch, ...]  # the launch shapes it supports
    # capture.step_method values it supports, its default first (none: no step capture)
    step_methods: tuple[str, ...] = ()
    native: NativeWindow | None = None  # the framework's own window (step_method=native)
    # How its reports show the steps when it opens the window itself (None: as step_ranges).
    native_ranges: StepRanges | None = None


_EVERY_LAUNCH: tuple[Launch, ...] = ("per_gpu", "per_node")


def _no_files(config: Config) -> tuple[str, ...]:
    return ()


def _nemo_files(config: Config) -> tuple[str, ...]:
    return (NEMO_OVERRIDES_FILE,)


def _typed(kind: type[WorkloadSettings]) -> Callable[[Block], WorkloadSettings]:
    def parse(block: Block) -> WorkloadSettings:
        settings: WorkloadSettings = typed_block(kind, block)
        return settings

    return parse


def _megatron_kind(
    kind: type[WorkloadSettings],
    program: Callable[[Config, LaunchShell], Program],
    method: str,
    counter: tuple[str, str],
) -> WorkloadKind:
    """Megatron-LM and Megatron Bridge: one torchrun per node, their own window by default."""
    return WorkloadKind(
        settings=_typed(kind),
        program=program,
        files=_step_files,
        step_capture=True,
        step_ranges=MEGATRON_STEPS,
        uses_nccl=True,
        launches=("per_node",),
        step_methods=("native", "hook"),
        native=NativeWindow(method, MEGATRON_NUMBERING, *counter, first=1),
    )


WORKLOADS: dict[str, WorkloadKind] = {
    "nccl": WorkloadKind(
        settings=_typed(NcclSettings),
        program=_nccl,
        files=_no_files,
        step_capture=False,
        step_ranges=None,
        uses_nccl=True,
        # The program runs one GPU a process (-g 1): one task a node would leave 7 of 8 idle.
        launches=("per_gpu",),
    ),
    "nemo": WorkloadKind(
        settings=_typed(NemoSettings),
        program=_nemo,
        files=_nemo_files,
        step_capture=True,
        step_ranges=NEMO_STEPS,
        uses_nccl=True,
        launches=_EVERY_LAUNCH,
        step_methods=("native",),
        native=NativeWindow(
            "native (NeMo 1.x model.nsys_profile.* overrides in nemo-overrides.txt)",
            "NeMo's trainer.global_step (optimizer steps taken, from 0)",
        ),
    ),
    "fsdp": WorkloadKind(
        settings=_typed(FsdpSettings),
        program=_fsdp,
        files=_step_files,
        step_capture=True,
        step_ranges=HELPER_STEPS,
        uses_nccl=True,
        launches=("per_node",),  # one torchrun per node (the schema says so too)
        step_methods=("hook", "patch"),
    ),
    "megatron": _megatron_kind(
        MegatronSettings,
        _megatron,
        "native (Megatron-LM's --profile --profile-step-start=FIRST-1 --profile-step-end=LAST "
        "--profile-ranks)",
        ("iteration + 1", "training.py:train"),
    ),
    "bridge": _megatron_kind(
        BridgeSettings,
        _bridge,
        "native (Megatron Bridge's profiling.use_nsys_profiler=true, "
        "profiling.profile_step_start=FIRST-1, profiling.profile_step_end=LAST, "
        "profiling.profile_ranks)",
        ("train_state.step + 1", "train.py:train"),
    ),
    "command": WorkloadKind(
        settings=_typed(CommandSettings),
        program=_command,
        files=_step_files,
        step_capture=True,
        step_ranges=HELPER_STEPS,
        uses_nccl=False,
        launches=_EVERY_LAUNCH,
        # hook: the helper reaches every Python process the command starts (torchrun's and
        # deepspeed's workers, a script a shell launcher execs); native: the program calls
        # cudaProfilerStart/Stop itself.
        step_methods=("hook", "native"),
        native=NativeWindow(
            "native (the program calls cudaProfilerStart and cudaProfilerStop itself)",
            "the program's own (capture.first_step/last_step only size the plan)",
        ),
        native_ranges=PROGRAM_STEPS,
    ),
    "python": WorkloadKind(
        settings=_typed(PythonSettings),
        program=_python,
        files=_step_files,
        step_capture=True,
        step_ranges=HELPER_STEPS,
        uses_nccl=False,
        launches=_EVERY_LAUNCH,
        step_methods=("hook", "patch"),
    ),
}


def workload_kind(config: Config) -> WorkloadKind:
    return WORKLOADS[config.workload.kind]


def step_ranges(config: Config) -> StepRanges | None:
    """How this config's reports show its steps (what verify checks)."""
    kind = workload_kind(config)
    if step_method(config) == "native" and kind.native_ranges is not None:
        return kind.native_ranges
    return kind.step_ranges


def program(config: Config, shell: LaunchShell) -> Program:
    return workload_kind(config).program(config, shell)


def program_files(config: Config) -> tuple[str, ...]:
    return workload_kind(config).files(config)
