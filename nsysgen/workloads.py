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
PATCH_FILE = "training-loop.patch"


@dataclass(frozen=True)
class Program:
    command: tuple[str, ...]
    # Environment the launch exports for the program (the step window of patched loops).
    env: tuple[tuple[str, str], ...] = ()
    needs_head_node: bool = False
    # Extra files of the folder that go with the program (overrides, patch, helper).
    files: tuple[str, ...] = field(default=())


def step_window_env(config: Config) -> tuple[tuple[str, str], ...]:
    """Variables a patched training loop reads; one patch serves every sweep point."""
    capture = config.capture
    if capture.mode != "steps":
        return ()
    return (
        ("NSYSGEN_PROFILE_FIRST_STEP", str(capture.first_step)),
        ("NSYSGEN_PROFILE_LAST_STEP", str(capture.last_step)),
        ("NSYSGEN_PROFILE_RANKS", window_ranks(config)),
    )


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


def _step_files(config: Config) -> tuple[str, ...]:
    """With capture=steps: a patch for the workload's own script, or the helper to use by hand."""
    if config.capture.mode != "steps":
        return ()
    return (PATCH_FILE,) if config.workload.settings["source"] else (WINDOW_HELPER_FILE,)


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
        files=_step_files(config),
    )


def _python(config: Config) -> Program:
    s = config.workload.settings
    return Program(
        command=(s["interpreter"], s["script"], *s["args"]),
        env=step_window_env(config),
        files=_step_files(config),
    )


PROGRAM_BY_KIND: dict[str, Callable[[Config], Program]] = {
    "nccl": _nccl,
    "nemo": _nemo,
    "fsdp": _fsdp,
    "python": _python,
}


def program(config: Config) -> Program:
    return PROGRAM_BY_KIND[config.workload.kind](config)
