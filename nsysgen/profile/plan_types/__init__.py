"""The plan's types: the one part of nsysgen/profile/ a target imports (tests/test_layers.py).

A target renders from the plan (`ProfilePlan`, with the config's `Facts`) and never derives a
fact again; this package holds types and the name rules of nsys's -o, nothing that derives.
"""

from __future__ import annotations

from nsysgen.profile.plan_types.facts import (
    NEMO_OVERRIDES_FILE,
    PATCH_FILE,
    SITE_DIR,
    SITE_FILE,
    SITE_HELPER_FILE,
    WINDOW_HELPER_FILE,
    YOURS,
    Env,
    EnvVar,
    Facts,
    JobEnv,
    LaunchShell,
    Program,
    RankSelection,
    RecipeRun,
    SelectionKind,
    StepFacts,
    StepRanges,
    TaskSet,
    Unset,
)
from nsysgen.profile.plan_types.plan import (
    AnalysisJob,
    Finding,
    Lint,
    ProfilePlan,
    Scheduler,
    SignalTooEarly,
    SizeEstimate,
    SlowdownEstimate,
    Teardown,
)
from nsysgen.profile.plan_types.ranks import RecordedRanks
from nsysgen.profile.plan_types.tasks import (
    CollectsOf,
    NameOf,
    RecordedTask,
    RecordedTasks,
    expand_name,
    report_path,
)

__all__ = [
    "NEMO_OVERRIDES_FILE",
    "PATCH_FILE",
    "SITE_DIR",
    "SITE_FILE",
    "SITE_HELPER_FILE",
    "WINDOW_HELPER_FILE",
    "YOURS",
    "AnalysisJob",
    "CollectsOf",
    "Env",
    "EnvVar",
    "Facts",
    "Finding",
    "JobEnv",
    "LaunchShell",
    "Lint",
    "NameOf",
    "ProfilePlan",
    "Program",
    "RankSelection",
    "RecipeRun",
    "RecordedRanks",
    "RecordedTask",
    "RecordedTasks",
    "Scheduler",
    "SelectionKind",
    "SignalTooEarly",
    "SizeEstimate",
    "SlowdownEstimate",
    "StepFacts",
    "StepRanges",
    "TaskSet",
    "Teardown",
    "Unset",
    "expand_name",
    "report_path",
]
