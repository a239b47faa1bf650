"""NeMo 1.x (workloads/nemo.py): its Hydra script reading nemo-overrides.txt, whose lines are
the workload's own overrides, then model.nsys_profile for the step window (with the recorded
ranks spelled out), or switched off where nsys opens the window."""

from __future__ import annotations

from nsysgen.output.render import ShellExpr
from nsysgen.profile.plan_types import NEMO_OVERRIDES_FILE, LaunchShell, StepFacts
from nsysgen.profile.workloads.nemo import NEMO_STEPS, WORKLOAD, NemoSettings
from nsysgen.profile.workloads.steps import step_ranges
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")
OWN = ("workload=nemo", "workload.nemo.overrides=['trainer.max_steps=50']")


def test_the_step_window_is_nemos_own() -> None:
    chosen = config(*OWN, "capture=steps", "capture.ranks=one_per_node", "cluster.nodes=3")
    assert WORKLOAD.overrides(chosen) == (
        "trainer.max_steps=50",
        "model.nsys_profile.enabled=true",
        "model.nsys_profile.start_step=10",
        "model.nsys_profile.end_step=14",
        "model.nsys_profile.ranks=[0,8,16]",
        "model.nsys_profile.gen_shape=false",
    )


def test_in_a_window_of_nsys_its_own_is_off() -> None:
    assert WORKLOAD.overrides(config(*OWN)) == (
        "trainer.max_steps=50",
        "model.nsys_profile.enabled=false",
    )


def test_the_program_reads_the_overrides_file() -> None:
    chosen = config(*OWN)
    program = WORKLOAD.program(chosen, SHELL, StepFacts())
    assert program.command == (
        "python3",
        "-u",
        "/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py",
        "--config-path=/opt/NeMo/examples/nlp/language_modeling/conf",
        "--config-name=megatron_gpt_config",
        "${nemo_overrides[@]}",
    )
    assert isinstance(program.command[-1], ShellExpr)
    assert program.files == WORKLOAD.files(chosen, StepFacts()) == (NEMO_OVERRIDES_FILE,)
    assert not program.needs_head_node and program.env == ()


def test_its_block_and_how_its_reports_show_steps() -> None:
    settings = config(*OWN).workload.settings
    assert isinstance(settings, NemoSettings) and settings.overrides == ("trainer.max_steps=50",)
    assert step_ranges(config(*OWN, "capture=steps")) == NEMO_STEPS
    assert NEMO_STEPS.unmarked is not None and "gen_shape=true" in NEMO_STEPS.unmarked
