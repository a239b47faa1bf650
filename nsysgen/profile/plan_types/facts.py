"""What a config implies whatever the target: the job's environment, the program and its
files, the step window, the recipe runs, which tasks record; computed once in plan building
(nsysgen/profile/facts.py) and read by the targets from the plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from nsysgen.shipped import STEP_WINDOW_FILE

NEMO_OVERRIDES_FILE = "nemo-overrides.txt"
WINDOW_HELPER_FILE = STEP_WINDOW_FILE
PATCH_FILE = "training-loop.patch"
# The zero-patch helper: its folder goes first on the program's PYTHONPATH.
SITE_DIR = "nsysgen-site"
SITE_FILE = f"{SITE_DIR}/sitecustomize.py"
SITE_HELPER_FILE = f"{SITE_DIR}/{STEP_WINDOW_FILE}"
# How a variable from cluster.env is explained (it has no reason field: it is the user's own).
YOURS = "your setting"

Env = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    key: str  # the config key that sets it, e.g. cluster.env_defaults.FI_PROVIDER
    reason: str


@dataclass(frozen=True)
class Unset:
    """A default this setup does not set, and why (for the README)."""

    name: str
    key: str
    reason: str


@dataclass(frozen=True)
class JobEnv:
    variables: tuple[EnvVar, ...]  # sorted by name
    unset: tuple[Unset, ...]  # sorted by name

    def pairs(self) -> Env:
        return tuple((v.name, v.value) for v in self.variables)

    def names(self) -> frozenset[str]:
        return frozenset(v.name for v in self.variables)

    def get(self, name: str) -> EnvVar | None:
        return next((v for v in self.variables if v.name == name), None)


@dataclass(frozen=True)
class RecipeRun:
    recipe: str
    args: tuple[str, ...]
    folder: str  # under the recipes output directory


SelectionKind = Literal["all", "first_on_node", "listed"]


@dataclass(frozen=True)
class TaskSet:
    """A set of Slurm tasks: every task, the first task of each node, or listed task ids."""

    kind: SelectionKind
    tasks: tuple[int, ...] = ()

    def contains(self, task: int, local_id: int) -> bool:
        if self.kind == "all":
            return True
        if self.kind == "first_on_node":
            return local_id == 0
        return task in self.tasks


@dataclass(frozen=True)
class RankSelection:
    profiled: TaskSet
    collectors: TaskSet


@dataclass(frozen=True)
class LaunchShell:
    """What a launcher reads from the target's job at run time, as shell expressions."""

    nnodes: str  # the number of nodes of the job
    job_id: str  # an id unique to the job
    head_node: str  # the host of the first node


@dataclass(frozen=True)
class Program:
    command: tuple[str, ...]
    # Environment the launch exports for the program (the step window of patched loops).
    env: Env = ()
    needs_head_node: bool = False
    # The launch puts the folder's SITE_DIR first on PYTHONPATH (the zero-patch helper).
    site: bool = False
    # Extra files of the folder that go with the program (overrides, patch, helper).
    files: tuple[str, ...] = field(default=())
    # It prints nccl-tests' result table into the job's log (the analysis job reads it).
    nccl_tests_log: bool = False


@dataclass(frozen=True)
class StepRanges:
    """How a report shows which training steps a step window holds (what verify checks)."""

    regex: str  # the NVTX range name of one step
    numbered: bool  # group 1 of regex is the step's number; else one range per step, unnumbered
    unopened: str  # the likely cause when the window never opened, other than a short job
    unmarked: str | None = None  # why a report may hold no such range though the window opened


@dataclass(frozen=True)
class StepFacts:
    """How capture=steps records the steps (all empty for other captures)."""

    method: str | None = None  # hook, patch or native (None: not capture=steps)
    env: Env = ()  # the variables the step helper reads (NSYSGEN_PROFILE_*)
    site: bool = False  # the zero-patch helper is on the program's PYTHONPATH
    marks: bool = False  # nsysgen's step helper runs in the program and marks each step
    files: tuple[str, ...] = ()  # the helper, the patch or the helper to use by hand
    ranks: str = "all"  # the ranks that open the window, as the helper reads them
    # How the reports show the steps (what verify checks; None: no step capture).
    ranges: StepRanges | None = None
    # A patched program imports the helper from the folder NSYSGEN_HELPER_DIR names.
    helper_dir: bool = False


@dataclass(frozen=True)
class Facts:
    """What the config implies for every target, derived once (nsysgen/profile/facts.py)."""

    job_env: JobEnv  # every variable of nsysgen's own job
    own_job_env: JobEnv  # the defaults a job script or manifest of the user's own gets
    steps: StepFacts
    files: tuple[str, ...]  # the files of the folder the program reads
    overrides: tuple[str, ...]  # the lines of NEMO_OVERRIDES_FILE, where the program has one
    recipes: tuple[RecipeRun, ...]
    selection: RankSelection  # which tasks record, and which run the node-wide collectors
    collector_args: tuple[str, ...]  # node-wide collectors, for one recorded rank per node
    extra_collectors: bool  # capture.extra_args start collectors in every recorded task
