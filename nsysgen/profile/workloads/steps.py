"""capture=steps, whatever the workload: how the steps are recorded (hook, patch or native),
the variables the step helper reads, the files it needs, and the words plan prints for them."""

from __future__ import annotations

from nsysgen.model import Config, SourceSettings
from nsysgen.profile.plan_types import (
    PATCH_FILE,
    SITE_FILE,
    SITE_HELPER_FILE,
    WINDOW_HELPER_FILE,
    Env,
    StepFacts,
    StepRanges,
)
from nsysgen.profile.workloads.base import window_ranks
from nsysgen.profile.workloads.registry import workload_kind
from nsysgen.shipped.step_window import LIBRARIES, names

# The step methods of the helper, in words (plan, compile output, README).
METHOD_TEXT = {
    "hook": "hook (zero-patch: the launch puts nsysgen's helper on PYTHONPATH; steps end at "
    "the optimizer step)",
    "patch": "patch (training-loop.patch: one line at the loop's top; steps end at the "
    "optimizer step)",
}


def step_window_env(config: Config) -> Env:
    """Variables the step helper reads; one patch or helper serves every sweep point."""
    capture = config.capture
    method = config.setup.step_method
    if method is None or not config.setup.marks_steps:
        return ()  # a framework's own window reads its arguments, not these
    env = [
        (names.FIRST_STEP, str(config.setup.first_step)),
        (names.LAST_STEP, str(config.setup.last_step)),
        (names.RANKS, window_ranks(config)),
    ]
    if (capture.optimizer_steps or 1) != 1:
        env.append((names.OPTIMIZER_STEPS, str(capture.optimizer_steps)))
    source, native = config.training_patch, workload_kind(config).native
    if method == "hook" and source is not None and source.at_step is not None:
        # The script's own counter, read where the step loop runs while the optimizer steps.
        env += [
            (names.STEP_EXPR, source.at_step),
            (names.STEP_SCOPE, source.scope),
        ]
    elif method == "hook" and native is not None and native.at_step is not None:
        env += [
            (names.STEP_EXPR, native.at_step),
            (names.STEP_SCOPE, native.scope),
        ]
    return tuple(env)


def step_files(config: Config) -> tuple[str, ...]:
    """With capture=steps: the zero-patch helper, a patch for the workload's own script, or the
    helper to use by hand."""
    method = config.setup.step_method
    if method is None:
        return ()
    if config.setup.hooks:
        return (SITE_FILE, SITE_HELPER_FILE)
    if method != "patch":
        return ()
    settings = config.workload.settings
    source = settings.source if isinstance(settings, SourceSettings) else None
    # The helper itself: the generated tree's one copy, which the launch names.
    return (PATCH_FILE, SITE_HELPER_FILE) if source else (WINDOW_HELPER_FILE,)


def step_ranges(config: Config) -> StepRanges | None:
    """How this config's reports show its steps (what verify checks)."""
    kind = workload_kind(config)
    if config.setup.step_method == "native" and kind.native_ranges is not None:
        return kind.native_ranges
    return kind.step_ranges


def step_facts(config: Config) -> StepFacts:
    """Everything above, once, for the plan."""
    return StepFacts(
        method=config.setup.step_method,
        env=step_window_env(config),
        site=config.setup.hooks,
        helper_dir=config.setup.step_method == "patch",
        marks=config.setup.marks_steps,
        files=step_files(config),
        ranks=window_ranks(config),
        ranges=step_ranges(config),
    )


def step_detection(config: Config) -> tuple[tuple[str, str], ...]:
    """What nsysgen found about the steps, before the run: for plan, compile and the README."""
    method = config.setup.step_method
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
    first = config.setup.first_step
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
