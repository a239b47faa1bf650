"""The plan's fact types (plan_types/facts.py): a job's environment looked up by name, the task
sets a selection is made of, and the folder's file names the helper and the patch go in."""

from __future__ import annotations

from nsysgen.profile.plan_types import (
    SITE_DIR,
    SITE_FILE,
    SITE_HELPER_FILE,
    WINDOW_HELPER_FILE,
    EnvVar,
    JobEnv,
    TaskSet,
    Unset,
)

ENV = JobEnv(
    (
        EnvVar("A", "1", "cluster.env.A", "yours"),
        EnvVar("B", "x y", "workload.env_defaults.B", "r"),
    ),
    (Unset("C", "cluster.env_defaults.C", "removed"),),
)


def test_a_job_env_by_name() -> None:
    assert ENV.pairs() == (("A", "1"), ("B", "x y"))
    assert ENV.names() == frozenset({"A", "B"})  # an unset default is not among them
    assert ENV.get("B") == EnvVar("B", "x y", "workload.env_defaults.B", "r")
    assert ENV.get("C") is None
    assert JobEnv((), ()).pairs() == ()


def test_task_sets_by_task_and_local_id() -> None:
    assert TaskSet("all").contains(17, 3)
    first = TaskSet("first_on_node")
    assert first.contains(8, 0) and not first.contains(9, 1)
    listed = TaskSet("listed", (0, 9))
    assert listed.contains(9, 1) and not listed.contains(8, 0)
    assert not TaskSet("listed").contains(0, 0)


def test_the_helper_goes_in_the_site_folder_under_its_shipped_name() -> None:
    assert SITE_DIR == "nsysgen-site"
    assert SITE_FILE == "nsysgen-site/sitecustomize.py"
    assert (
        SITE_HELPER_FILE == f"nsysgen-site/{WINDOW_HELPER_FILE}" == "nsysgen-site/nsysgen_window.py"
    )
