"""The lints of when the capture runs (lints/window.py), called on a plan: the program arguments
a step limit is read from, a step window past the run as the framework numbers its steps, a
source the job runs only at a path boundary, the hardware trace only where the capture is
time-boxed, and a window that opens after nccl-tests have ended."""

from __future__ import annotations

from nsysgen.profile.lints import window
from tests.profile.configs import config, planned

MEGATRON = ("workload=megatron", "capture=steps")


def test_the_arguments_a_step_limit_is_read_from() -> None:
    [(path, args)] = window.script_arguments(config("workload=fsdp"))
    assert path == "workload.fsdp.args" and "--max_steps=100" in args
    [(path, args)] = window.script_arguments(config("workload=nemo"))
    assert path == "workload.nemo.overrides" and "trainer.max_steps=100" in args
    # A command's argv is the user's whole command line, not arguments nsysgen passes.
    assert list(window.script_arguments(config("workload=command"))) == []
    assert list(window.script_arguments(config("workload=nccl"))) == []


def test_megatron_numbers_its_iterations_from_one() -> None:
    # --train-iters=100 runs iterations 1..100.
    fits = planned(*MEGATRON, "capture.first_step=96", "capture.last_step=100")
    assert list(window.steps_past_the_run(*fits)) == []
    cut = planned(*MEGATRON, "capture.first_step=96", "capture.last_step=101")
    assert list(window.steps_past_the_run(*cut)) == [
        (
            "workload.megatron.args[7]",
            "--train-iters=100 ends the run after 100 steps, but the window records steps 96..101 "
            "(capture.first_step..last_step): the window is cut short: step 101 never runs "
            "(assumed: megatron numbers its steps from 1, as capture.*_step count them, so a run "
            "of 100 steps runs steps 1..100 and ends before step 101) (allowed: "
            "capture.last_step <= 100, or a step limit of at least 101)",
        )
    ]
    never = planned(*MEGATRON, "capture.first_step=101", "capture.last_step=103")
    [(_, message)] = window.steps_past_the_run(*never)
    assert "(capture.first_step..last_step): the window never opens (assumed:" in message


def test_a_hydra_step_limit_of_nemo_from_zero() -> None:
    chosen = planned(
        "workload=nemo", "capture=steps", "capture.first_step=98", "capture.last_step=101"
    )
    [(path, message)] = window.steps_past_the_run(*chosen)
    assert path == "workload.nemo.overrides[2]"
    assert "the window is cut short: steps 100..101 never run" in message
    assert message.endswith("(allowed: capture.last_step <= 99, or a step limit of at least 102)")


def test_the_job_runs_the_source_only_at_a_path_boundary() -> None:
    source = "tests/training_scripts/plain_loop.py"
    steps = ("workload=python", "capture=steps", f"workload.python.source={source}")
    under = planned(*steps, f"workload.python.script=/fsx/repo/{source}")
    assert list(window.source_not_run(*under)) == []
    beside = planned(*steps, f"workload.python.script=/fsx/x{source}")
    assert [path for path, _ in window.source_not_run(*beside)] == ["workload.python.script"]
    # No step window, no source: nothing to compare.
    assert list(window.source_not_run(*planned("workload=python"))) == []


def test_the_hardware_trace_is_questioned_only_in_a_time_boxed_capture() -> None:
    hardware = ("cluster=p6-b200", "nsight=2026.4.1", "capture.cuda_trace=hardware")
    [(path, message)] = window.hardware_trace_time_boxed(*planned(*hardware))
    assert path == "capture.cuda_trace"
    assert message.startswith(
        "nsys 2026.4.1 on B200-180GB records the CUDA hardware trace (--trace=cuda,nvtx), and a "
        "capture that starts or stops while the program runs (window) has come back with no "
        "kernels"
    )
    whole = planned(*hardware, "capture.delay=0", "capture.duration=0")
    assert not whole[1].time_boxed and list(window.hardware_trace_time_boxed(*whole)) == []
    assert (
        list(window.hardware_trace_time_boxed(*planned("cluster=p6-b200", "nsight=2026.4.1"))) == []
    )


def test_a_window_after_the_nccl_tests_slow_end() -> None:
    [(path, message)] = window.window_after_nccl_tests(*planned("capture.delay=30"))
    assert path == "capture.delay"
    assert message.startswith(
        "the window opens 30 s after launch, but nccl-tests are estimated to end by 11 s (run ~8 s"
    )
    assert message.endswith("(allowed: capture.delay below 11, or auto)")
    assert list(window.window_after_nccl_tests(*planned("capture.delay=10"))) == []
    assert list(window.nccl_trace_needs_new_nccl(*planned())) == []
