"""The program each workload kind runs, and what its launch needs besides the command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nsysgen.model import Config
from nsysgen.ranks import explicit_ranks


class ShellExpr(str):
    """A word that the shell must expand at run time (written double-quoted, not escaped).

    Only nsysgen's own code builds these, from fixed text; config values never become one.
    """


NEMO_OVERRIDES_FILE = "nemo-overrides.txt"
WINDOW_HELPER_FILE = "nsysgen_window.py"


@dataclass(frozen=True)
class Program:
    command: tuple[str, ...]
    # Environment the launch exports for the program (the step window of patched loops).
    env: tuple[tuple[str, str], ...] = ()
    needs_head_node: bool = False
    # Extra files of the folder the program reads at run time: name -> kind.
    files: tuple[str, ...] = field(default=())


def step_window_env(config: Config) -> tuple[tuple[str, str], ...]:
    """Variables a patched training loop reads; one patch serves every sweep point."""
    capture = config.capture
    if capture.mode != "steps":
        return ()
    ranks = capture.ranks
    rank_text = ",".join(map(str, ranks)) if isinstance(ranks, tuple) else ranks
    return (
        ("NSYSGEN_PROFILE_FIRST_STEP", str(capture.first_step)),
        ("NSYSGEN_PROFILE_LAST_STEP", str(capture.last_step)),
        ("NSYSGEN_PROFILE_RANKS", rank_text),
    )


def nemo_overrides(config: Config) -> list[str]:
    """NeMo 1.x Hydra overrides: the workload's own, then model.nsys_profile for the window."""
    overrides = list(config.workload.settings["overrides"])
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


def _nccl(config: Config) -> Program:
    s = config.workload.settings
    return Program(
        command=(
            f"{s['build_dir']}/{s['binary']}",
            "-b",
            s["min_bytes"],
            "-e",
            s["max_bytes"],
            "-f",
            str(s["step_factor"]),
            # One GPU per task: the launch starts one task per GPU.
            "-g",
            "1",
            "-c",
            str(s["check"]),
            "-n",
            str(s["iterations"]),
        )
    )


def _nemo(config: Config) -> Program:
    s = config.workload.settings
    return Program(
        command=(
            "python3",
            "-u",
            s["script"],
            f"--config-path={s['config_path']}",
            f"--config-name={s['config_name']}",
            ShellExpr("${nemo_overrides[@]}"),
        ),
        files=(NEMO_OVERRIDES_FILE,),
    )


def _fsdp(config: Config) -> Program:
    s = config.workload.settings
    return Program(
        command=(
            "torchrun",
            f"--nproc_per_node={config.cluster.gpus_per_node}",
            ShellExpr("--nnodes=${SLURM_JOB_NUM_NODES}"),
            ShellExpr("--rdzv_id=${SLURM_JOB_ID}"),
            "--rdzv_backend=c10d",
            ShellExpr(f"--rdzv_endpoint=${{head_node}}:{s['rdzv_port']}"),
            s["script"],
            *s["args"],
        ),
        env=step_window_env(config),
        needs_head_node=True,
        files=(WINDOW_HELPER_FILE,) if config.capture.mode == "steps" else (),
    )


def _python(config: Config) -> Program:
    s = config.workload.settings
    return Program(
        command=(s["interpreter"], s["script"], *s["args"]),
        env=step_window_env(config),
        files=(WINDOW_HELPER_FILE,) if config.capture.mode == "steps" else (),
    )


PROGRAM_BY_KIND: dict[str, Callable[[Config], Program]] = {
    "nccl": _nccl,
    "nemo": _nemo,
    "fsdp": _fsdp,
    "python": _python,
}


def program(config: Config) -> Program:
    return PROGRAM_BY_KIND[config.workload.kind](config)
