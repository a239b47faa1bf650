"""Cross-field rules the schemas cannot state (semantic.py), each called on a typed config: the
settings of another capture mode, switches nsysgen sets itself, nccl-tests' size range, the first
step a method can record, the step methods and recipes a config can run; sorted, each once."""

from __future__ import annotations

from nsysgen.errors import Issue
from nsysgen.profile.semantic import semantic_issues
from tests.profile.configs import config


def issues(*overrides: str) -> list[Issue]:
    return semantic_issues(config(*overrides))


def test_the_packaged_defaults_have_none() -> None:
    assert issues() == []
    assert issues("workload=fsdp", "capture=steps") == []


def test_a_setting_of_another_capture_mode_is_named_with_the_mode_that_reads_it() -> None:
    assert issues("+capture.first_step=3", "+capture.nvtx_range=r") == [
        Issue(
            "capture.first_step",
            "capture=window ignores first_step; only capture=steps reads it (allowed: leave it "
            "unset, or choose capture=steps)",
        ),
        Issue(
            "capture.nvtx_range",
            "capture=window ignores nvtx_range; only capture=nvtx reads it (allowed: leave it "
            "unset, or choose capture=nvtx)",
        ),
    ]


def test_extra_args_may_not_set_what_nsysgen_sets() -> None:
    found = issues("capture.extra_args=['--trace=cuda', '-o', '--kill=none', '--output=x']")
    assert [issue.path for issue in found] == [
        "capture.extra_args[0]",
        "capture.extra_args[1]",
        "capture.extra_args[3]",
    ]
    assert found[1].message == (
        "-o is set by nsysgen from capture.* (mode, delay, trace, report_dir, ...) and would "
        "contradict it (allowed: other nsys profile switches)"
    )


def test_nccl_tests_need_a_size_range() -> None:
    assert issues("workload.nccl.min_bytes=4G") == [
        Issue(
            "workload.nccl.min_bytes",
            "4G is more than workload.nccl.max_bytes 2G: nccl-tests would run no size (allowed: "
            "min_bytes <= max_bytes)",
        )
    ]
    assert issues("workload.nccl.min_bytes=2G") == []


def test_the_first_step_a_method_can_record() -> None:
    assert issues("workload=python", "capture=steps", "capture.first_step=0") == [
        Issue(
            "capture.first_step",
            "the zero-patch helper sees where a step ends (its optimizer step), so the first step "
            "of a run has no start it can record (allowed: first_step >= 1, or "
            "capture.step_method=patch)",
        )
    ]
    patched = ("workload=python", "capture=steps", "capture.step_method=patch")
    assert issues(*patched, "capture.first_step=0") == []
    assert issues("workload=megatron", "capture=steps", "capture.first_step=0") == [
        Issue("capture.first_step", "megatron numbers its steps from 1 (allowed: first_step >= 1)")
    ]


def test_a_step_method_and_recipes_the_config_cannot_run() -> None:
    assert issues("workload=fsdp", "capture=steps", "capture.step_method=native") == [
        Issue(
            "capture.step_method",
            "workload kind fsdp cannot record steps by native (allowed: auto, hook, patch)",
        )
    ]
    assert issues("nsight=2026.4.1", "capture.recipes=[cuda_gpu_kern_pace,nccl_straggler]") == [
        Issue(
            "capture.recipes[0]",
            "cuda_gpu_kern_pace needs kernel names (allowed: set capture.pace_kernels)",
        ),
        Issue(
            "capture.recipes[1]",
            "nccl_straggler reads advanced NCCL tracing only (allowed: set capture.nccl_trace, "
            "e.g. [default], with nsight=2026.4.1 or later)",
        ),
    ]


EXAMPLE_ARGS = "the bundled example's 12 arguments (--model_type=llama_v2 ...)"


def test_a_script_of_ones_own_never_gets_the_examples_arguments() -> None:
    found = issues("workload=fsdp", "workload.fsdp.script=/fsx/myrepo/train/train_loop.py")
    assert [i.path for i in found] == ["workload.fsdp.args"]
    assert EXAMPLE_ARGS in found[0].message and "workload.fsdp.args=[] for none" in found[0].message


def test_a_script_of_ones_own_with_its_own_arguments_compiles() -> None:
    script = "workload.fsdp.script=/fsx/myrepo/train/train_loop.py"
    assert issues("workload=fsdp", script, 'workload.fsdp.args=["--lr=1e-4"]') == []
    assert issues("workload=fsdp", script, "workload.fsdp.args=[]") == []
    # A copy of the example's train.py elsewhere keeps the example's arguments.
    assert issues("workload=fsdp", "workload.fsdp.script=/fsx/copy/train.py") == []


def test_the_placeholder_command_is_refused() -> None:
    found = issues("workload=command")
    assert [i.path for i in found] == ["workload.command.argv"]
    assert "the bundled placeholder" in found[0].message
    assert issues("workload=command", "workload.command.argv=[torchrun,/fsx/t.py]") == []
    # The override each message shows is one that parses and compiles.
    hint = found[0].message.split("('")[1].rstrip("')")
    assert issues("workload=command", hint) == []
    mine = issues("workload=fsdp", "workload.fsdp.script=/fsx/myrepo/train/train_loop.py")
    hint = mine[0].message.split("('")[1].split("')")[0]
    assert (
        issues("workload=fsdp", "workload.fsdp.script=/fsx/myrepo/train/train_loop.py", hint) == []
    )
