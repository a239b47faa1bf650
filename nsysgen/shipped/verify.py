"""Check the reports of one profiled job against what its setup promised.

This module uses the standard library only: nsysgen copies it verbatim into every generated
folder as nsysgen-verify.py, so that recipes.sh and fetch-reports.sh can check reports on a
cluster or laptop where nsysgen is not installed (`python3 nsysgen-verify.py`). `nsysgen verify`
runs the same code. What to expect comes from nsysgen-expect.json in the folder, which nsysgen
writes from the same plan that `nsysgen plan` shows.

Exit codes: 0 every expected report is there and holds what was asked; 1 something is missing or
wrong (a table says what, per rank, and the likely cause); 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_BAD_INPUT = 2
EXPECT_FILE = "nsysgen-expect.json"
EXPECT_FORMAT = 3
MANIFEST_FILE = "nsysgen-manifest.json"
# What FOLDER must be, in the messages that refuse one.
SETUP_FOLDER = f"a compiled setup folder (one holding {EXPECT_FILE}, e.g. generated/fsdp-p4de)"
SETUPS_SHOWN = 8  # setup folders a refusal names, of a tree's
# Slurm: each run (job) writes its reports into a folder of its own, job<ID>/ in the report
# folder, so that runs never mix. Records of the run, in its folder: .nsysgen/nodes (written
# by job.sbatch) and .nsysgen/task<N>/ (nsys's TMPDIR, where a report being written when nsys
# was killed stays).
STATE_DIR = ".nsysgen"
RUN_FOLDER = re.compile(r"job([0-9]+)")
# EKS: fetch-reports.sh copies one run, the reports written since the job was created, into
# DEST/run-<creation time>/.
FETCHED_RUN = re.compile(r"run-[0-9]{8}T[0-9]{6}Z")
NVTX_RANGE_TYPES = (59, 60, 70, 71)  # push/pop and start/end ranges, with and without payload
NVTX_MARK_TYPES = (34,)  # marks: the step helper marks every optimizer step with one
# The step helper's mark: the number of the step range it is in, the optimizer's class and
# index in its process.
OPTIMIZER_MARK = re.compile(r"nsysgen optimizer step (\d+) (\S+)#(\d+)( skipped)?")
# What may follow it: the program's counter that numbered the steps and the value it had at this
# optimizer step. The counter is the program's own expression, which may hold " = " itself: the
# value is after the last one.
COUNTER_READ = re.compile(r" \| (.+) = (-?\d+)", re.DOTALL)
# The helper's mark as the window opens, once per recording process: how many optimizer steps
# make one training step, how many of the counter's advances it checked before the window, and
# what numbers the steps (the program's counter, nsysgen's own count, or nsysgen's count because
# the counter failed the check: the text says why).
NUMBERING_MARK = re.compile(
    r"nsysgen numbering per_step=(\d+) checked=(\d+) (counter|count|fallback)=(.*)", re.DOTALL
)
_NS = 1e9
# Planned report names hold <token>s for what only the run knows (<jobid>, <host3>, <pid0>).
TOKEN = re.compile(r"<([A-Za-z0-9_]+)>")
ANY = r"[^/]*?"


class BadInput(Exception):
    """Input that verify cannot work with: exit 2 with this message."""


@dataclass
class Numbering:
    """How the step helper numbered the steps of one process of a report (its numbering mark)."""

    process: int  # the pid
    source: str  # counter | count | fallback
    text: str  # the counter; how nsysgen counted; or why the counter was not used
    per_step: int  # optimizer steps per training step, as the helper learned or was told
    checked: int  # the counter's step-to-step advances checked before the window (0: none)


@dataclass
class Finding:
    """One expected report (or one unexpected file) and what is wrong with it."""

    label: str  # "rank 9", "node 1", "pod ...-worker-0", or "extra"
    node: str  # node name (index), as far as known
    status: str  # ok | missing | empty | unreadable | wrong | extra
    report: str | None = None
    problems: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numbering: list[Numbering] = field(default_factory=list)  # per process, where marked


@dataclass
class Result:
    job: str
    job_id: str | None
    report_dir: str
    nsys_version: str
    findings: list[Finding]
    notes: list[str]

    @property
    def complete(self) -> bool:
        return all(f.status == "ok" for f in self.findings)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.complete else EXIT_INCOMPLETE


# ---------------------------------------------------------------------------------------------
# Expectations


def load_expect(folder: Path | None) -> dict[str, Any]:
    """The expectations of the setup in `folder`, FOLDER on the command line. It has no default:
    the one copy of this script sits above the setup folders (the top of the generated tree),
    and `nsysgen verify` runs it from inside the installed package; neither is a setup."""
    if folder is None:
        here = Path(__file__).resolve().parent  # the standalone copy: its tree's setups
        raise BadInput(f"no FOLDER given: pass {SETUP_FOLDER}{_what_is_in(here)}")
    path = folder / EXPECT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise BadInput(
            f"{path} not found: {folder} is not {SETUP_FOLDER}{_what_is_in(folder)}"
        ) from None
    except (OSError, ValueError) as error:
        raise BadInput(f"{path}: not readable as JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != EXPECT_FORMAT:
        raise BadInput(f"{path}: not an nsysgen expectations file of format {EXPECT_FORMAT}")
    return data


def _what_is_in(folder: Path) -> str:
    """What `folder`, which is not a setup, holds that helps: the setup folders right below
    it (the top of a generated tree), or a manifest: a folder an older nsysgen compiled."""
    if (folder / MANIFEST_FILE).is_file():
        return f"; an nsysgen folder ({MANIFEST_FILE}) without expectations: regenerate it"
    try:
        setups = sorted(p.parent.name for p in folder.glob(f"*/{EXPECT_FILE}"))
    except OSError:
        return ""
    if not setups:
        return ""
    more = f", ... ({len(setups)} in all)" if len(setups) > SETUPS_SHOWN else ""
    return f"; the setup folders in {folder}: {', '.join(setups[:SETUPS_SHOWN])}{more}"


def expand_parts(parts: Sequence[str | int], coordinates: Sequence[int]) -> str:
    """A report name from its pattern: literal text, and 0/1/2 for the task, node, local id."""
    return "".join(part if isinstance(part, str) else str(coordinates[part]) for part in parts)


def name_regex(name: str) -> tuple[str, str | None]:
    """(regex, format string or None) of a planned report name with <token> placeholders."""
    regex, fmt, pos, node_seen, formattable = [], [], 0, False, True
    for match in TOKEN.finditer(name):
        literal = name[pos : match.start()]
        regex.append(re.escape(literal))
        fmt.append(literal.replace("{", "{{").replace("}", "}}"))
        token = match.group(1)
        if token == "jobid":
            regex.append("(?P<job>[0-9]+)")
            fmt.append("{job}")
        elif token.startswith("host") and token[4:].isdigit():
            regex.append("(?P=node)" if node_seen else "(?P<node>[^/]+?)")
            fmt.append("{node}")
            node_seen = True
        else:
            regex.append(ANY)
            formattable = False
        pos = match.end()
    regex.append(re.escape(name[pos:]))
    fmt.append(name[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(regex), ("".join(fmt) if formattable else None)


def expected_reports(expect: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every expected report, one at a time: nsysgen-expect.json keeps a grid of ranks (every
    node of a range times some local ids) as its shape and name pattern, so that its size does
    not grow with the job; a short list of tasks is kept as it is."""
    for group in expect["reports"]:
        unit = group["unit"]
        if "tasks" in group:
            for task, node, local, name, collects in group["tasks"]:
                yield _with_pod(expect, _entry(unit, task, node, local, name, collects))
            continue
        per_node, (start, stop) = group["per_node"], group["nodes"]
        collecting = set(group["collecting_locals"])
        for node in range(start, stop):
            for local in group["locals"]:
                task = node * per_node + local
                name = expand_parts(group["name"], (task, node, local))
                entry = _entry(unit, task, node, local, name, local in collecting)
                yield _with_pod(expect, entry)


def _with_pod(expect: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """EKS: the name of the entry's pod (its node's), whose folder under .nsysgen/ is nsys's
    TMPDIR, where a capture the pod's end cut off stays."""
    pods = expect.get("pods")
    if pods:
        node = entry["node"]
        entry["pod"] = pods[0] if node == 0 else pods[1].format(node=node, worker=node - 1)
    return entry


def _entry(
    unit: str, task: int, node: int, local: int, name: str, collects: bool
) -> dict[str, Any]:
    regex, fmt = name_regex(name)
    return {
        "task": task,
        "node": node,
        "local": local,
        "label": f"{unit} {task}",
        "regex": regex,
        "name": fmt,
        "collectors": collects,
    }


def _report_files(report_dir: Path) -> list[Path]:
    files = [p for p in report_dir.iterdir() if p.suffix in (".nsys-rep", ".qdstrm")]
    return sorted(p for p in files if p.is_file())


def _stem(path: Path) -> str:
    return path.name[: -len(path.suffix)]


def _job_of(expect: dict[str, Any], path: Path) -> str | None:
    """The job id in a report's name, through nsys's own -o pattern."""
    generic = expect["generic_regex"]
    match = re.fullmatch(generic, _stem(path)) if generic else None
    job = match.groupdict().get("SLURM_JOB_ID") if match else None
    return job if job and job.isdigit() else None


def _job_ids(expect: dict[str, Any], files: list[Path]) -> set[str]:
    return {job for job in (_job_of(expect, path) for path in files) if job}


def runs_in(report_dir: Path) -> dict[str, Path]:
    """The run folders (job<ID>/) in a report folder, by job id."""
    runs = {}
    for path in report_dir.iterdir():
        match = RUN_FOLDER.fullmatch(path.name)
        if match and path.is_dir():
            runs[match.group(1)] = path
    return runs


@dataclass
class Run:
    """The one run a check reads: its folder and its Slurm job id (None: not a Slurm job)."""

    folder: Path
    job_id: str | None
    others: dict[str, Path] = field(default_factory=dict)  # the other runs, by job id


def select_run(expect: dict[str, Any], reports: Path, job_id: str | None) -> Run:
    """The run to check in `reports`: the report folder (its runs' folders job<ID>/ are in
    it), one run's folder, or a folder of reports copied without their run folder. Without
    --job-id, the newest run (highest job id); the others are listed, never read."""
    if not reports.is_dir():
        raise BadInput(f"report folder {reports} does not exist (pass --reports DIR)")
    if job_id is not None and not job_id.isdigit():
        raise BadInput(f"--job-id {job_id}: not a Slurm job id (allowed: digits)")
    if not expect["run_folders"]:
        return _fetched_run(reports)
    runs = runs_in(reports)
    own = RUN_FOLDER.fullmatch(reports.name)
    if runs:
        if job_id is not None and job_id not in runs:
            raise BadInput(
                f"--job-id {job_id}: no run of it in {reports} (runs there: {_listing(runs)})"
            )
        chosen = job_id or max(runs, key=int)
        others = {k: v for k, v in runs.items() if k != chosen}
        return Run(runs[chosen], chosen, others)
    if own and expect["run_folders"]:
        if job_id is not None and job_id != own.group(1):
            raise BadInput(f"--job-id {job_id}: {reports} is the folder of job {own.group(1)}")
        return Run(reports, own.group(1))
    if job_id is None and expect["job_in_name"]:
        ids = _job_ids(expect, _report_files(reports))
        if not ids:
            raise BadInput(
                f"no report or run of job {expect['job']} in {reports}: pass --reports DIR "
                "(the report folder, or one run's folder job<ID>) or --job-id ID"
            )
        job_id = max(ids, key=int)
    return Run(reports, job_id)


def _fetched_run(reports: Path) -> Run:
    """EKS: the newest run fetch-reports.sh copied into `reports` (run-<created>/), unless
    `reports` holds reports itself (one run's folder, or reports copied by hand)."""
    runs = {p.name: p for p in reports.iterdir() if FETCHED_RUN.fullmatch(p.name) and p.is_dir()}
    if not runs or _report_files(reports):
        return Run(reports, None)
    chosen = max(runs)
    return Run(runs[chosen], None, {k: v for k, v in runs.items() if k != chosen})


def _listing(runs: dict[str, Path]) -> str:
    return ", ".join(f"job {job}" for job in sorted(runs, key=int))


def _other_runs_note(expect: dict[str, Any], run: Run) -> str | None:
    """One line on the runs not checked, with their report counts: what --job-id can pick."""
    if not run.others:
        return None
    wanted = sum(1 for _ in expected_reports(expect))
    if run.job_id is None:  # EKS: runs by their folder's name, which sorts by time
        counts = [
            f"{name} ({len({_stem(p) for p in _report_files(run.others[name])})} of {wanted} "
            "reports)"
            for name in sorted(run.others)
        ]
        newest = all(name < run.folder.name for name in run.others)
        which = f"the newest run, {run.folder.name}" if newest else run.folder.name
        return (
            f"checked {which}; other runs here, not read: {', '.join(counts)} "
            "(pass --reports DIR/run-... to check one)"
        )
    counts = [
        f"job {job} ({len({_stem(p) for p in _report_files(run.others[job])})} of {wanted} reports)"
        for job in sorted(run.others, key=int)
    ]
    newest = all(int(job) < int(run.job_id or 0) for job in run.others)
    which = f"the newest run, job {run.job_id}" if newest else f"job {run.job_id}"
    return (
        f"checked {which}; other runs here, not read: {', '.join(counts)} "
        "(pass --job-id ID to check one)"
    )


def _node_names(run_dir: Path) -> dict[int, str]:
    nodes_file = run_dir / STATE_DIR / "nodes"
    if nodes_file.is_file():
        return dict(enumerate(nodes_file.read_text(encoding="utf-8").split()))
    return {}


# ---------------------------------------------------------------------------------------------
# nsys


@dataclass
class Tools:
    nsys: str | None
    importer: str | None
    version: str | None


def find_tools(expect: dict[str, Any], nsys: str | None, importer: str | None) -> Tools:
    nsys = nsys or os.environ.get("NSYS") or expect.get("nsys")
    if nsys and not os.access(nsys, os.X_OK):
        nsys = shutil.which(nsys) if "/" not in nsys else None
    if not nsys:
        nsys = shutil.which("nsys")
    importer = importer or os.environ.get("QDSTRM_IMPORTER") or expect.get("importer")
    if importer and not os.access(importer, os.X_OK):
        importer = shutil.which("QdstrmImporter")
    version = None
    if nsys:
        proc = subprocess.run([nsys, "--version"], capture_output=True, text=True, check=False)
        found = re.search(r"version (\S+)", proc.stdout)
        version = found.group(1) if found else None
    return Tools(nsys, importer, version)


def convert(tools: Tools, qdstrm: Path, output: Path) -> str | None:
    """QdstrmImporter qdstrm -> output; None when it worked, else why not."""
    if not tools.importer:
        return "no QdstrmImporter to convert it (set QDSTRM_IMPORTER)"
    proc = subprocess.run(
        [tools.importer, "--input-file", str(qdstrm), "--output-file", str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not output.is_file() or output.stat().st_size == 0:
        last = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        return f"QdstrmImporter failed (exit {proc.returncode}: {last[0][:200]})"
    return None


_SWITCHES: dict[str, list[str]] = {}


def export_switches(nsys: str) -> list[str]:
    """The export switches the analysis needs, where this nsys's export has them:
    `--include-blobs true` (2025.x) exports NCCL's NVTX payloads (the message sizes);
    `--include-json true` (2025.6.1+) the composite tables of advanced NCCL tracing
    (NCCL_GPU_OPERATIONS, with each collective's operationId). `nsysgen analyze` reuses this
    export and reads the same one it would make itself. nsys 2023.4.4 has neither switch, and
    refuses a switch it does not know."""
    if nsys not in _SWITCHES:
        proc = subprocess.run(
            [nsys, "export", "--help"], capture_output=True, text=True, check=False
        )
        text = proc.stdout + proc.stderr
        _SWITCHES[nsys] = [
            part
            for switch in ("--include-blobs", "--include-json")
            if switch in text
            for part in (switch, "true")
        ]
    return _SWITCHES[nsys]


def export_sqlite(tools: Tools, report: Path) -> tuple[Path | None, str | None]:
    """The report's SQLite export (an up-to-date one is reused); (None, why) if unreadable."""
    target = report.with_suffix(".sqlite")
    if target.is_file() and target.stat().st_mtime >= report.stat().st_mtime:
        return target, None
    if not tools.nsys:
        return None, "no nsys to read it (set NSYS or pass --nsys)"
    # Into a hidden name, renamed into place once whole: a failed export leaves part of one
    # (nsys 2023.4.4 on a damaged report: an empty file, or the tables it wrote before it
    # stopped), newer than the report, which this check and nsysgen analyze would then take
    # for the report's current export.
    partial = report.with_name(f".{report.stem}.{os.getpid()}.partial.sqlite")
    proc = subprocess.run(
        [tools.nsys, "export", "--type", "sqlite", "--force-overwrite", "true"]
        + export_switches(tools.nsys)
        + ["--output", str(partial), str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        lines = [x for x in (proc.stdout + proc.stderr).splitlines() if "%" not in x]
        return None, f"nsys export failed (exit {proc.returncode}: {' '.join(lines)[-200:]})"
    partial.replace(target)
    return target, None


# ---------------------------------------------------------------------------------------------
# What a report holds


@dataclass
class Contents:
    ranges: list[str]
    kernels: int
    osrt: int
    gpu_metrics: int
    duration_s: float | None
    efa_devices: int = 0  # EFA device ports the efa_metrics plugin sampled
    efa_samples: int = 0
    plugin_failures: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # nsys's diagnostics of dropped CUPTI events
    # (process, start, end, name) of every NVTX range, and (process, time, text) of every
    # optimizer-step mark of the step helper, for the one-optimizer-step-per-step check.
    spans: list[tuple[int, int, int, str]] = field(default_factory=list)
    marks: list[tuple[int, int, str]] = field(default_factory=list)
    # (process, time, text) of the helper's numbering marks: how each process numbered its steps.
    numbering: list[tuple[int, int, str]] = field(default_factory=list)


def _count(db: sqlite3.Connection, table: str, where: str = "") -> int:
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
    ).fetchone()
    if not exists:
        return 0
    row = db.execute(f"SELECT COUNT(*) FROM {table} {where}").fetchone()  # noqa: S608
    return int(row[0])


def read_contents(sqlite_file: Path) -> Contents:
    with sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True) as db:
        ranges: list[str] = []
        spans: list[tuple[int, int, int, str]] = []
        marks: list[tuple[int, int, str]] = []
        numbering: list[tuple[int, int, str]] = []
        if _count(db, "NVTX_EVENTS"):
            types = ",".join(map(str, NVTX_RANGE_TYPES + NVTX_MARK_TYPES))
            rows = db.execute(
                # globalTid: the pid in bits 24..47 (the bits above hold the VM id).
                "SELECT COALESCE(e.text, s.value), e.eventType, "
                "(COALESCE(e.globalTid, 0) >> 24) & 16777215, e.start, e.end "
                "FROM NVTX_EVENTS e LEFT JOIN StringIds s ON e.textId = s.id "
                f"WHERE e.eventType IN ({types}) ORDER BY e.start, e.end"  # noqa: S608
            ).fetchall()
            for text, kind, process, start, end in rows:
                if text is None:
                    continue
                if kind in NVTX_MARK_TYPES:
                    if str(text).startswith("nsysgen optimizer step "):
                        marks.append((int(process), int(start), str(text)))
                    elif str(text).startswith("nsysgen numbering "):
                        numbering.append((int(process), int(start), str(text)))
                    continue
                ranges.append(str(text))
                if end is not None:
                    spans.append((int(process), int(start), int(end), str(text)))
        duration = None
        if _count(db, "ANALYSIS_DETAILS"):
            row = db.execute("SELECT duration FROM ANALYSIS_DETAILS").fetchone()
            duration = None if row is None or row[0] is None else float(row[0]) / _NS
        devices, samples = _efa_rows(db)
        return Contents(
            ranges=ranges,
            kernels=_count(db, "CUPTI_ACTIVITY_KIND_KERNEL"),
            osrt=_count(db, "OSRT_API"),
            gpu_metrics=_count(db, "GPU_METRICS"),
            duration_s=duration,
            efa_devices=devices,
            efa_samples=samples,
            plugin_failures=_plugin_failures(db),
            dropped=_dropped_events(db),
            spans=spans,
            marks=marks,
            numbering=numbering,
        )


def _efa_rows(db: sqlite3.Connection) -> tuple[int, int]:
    """(EFA device ports, samples) of the efa_metrics plugin. nsys 2025.3 stores the plugin's
    samples as generic counter events: one NVTX scope "AWS EFAs/<device>:<port> [<freq>Hz]" per
    port, and one GENERIC_EVENTS row per sample of a port, whose type's fields are the counters
    ("rdma_read_bytes per second", ...). Other plugins' samples use the same tables, so samples
    count only for types with an EFA counter field."""
    if not _count(db, "NVTX_SCOPES"):
        return 0, 0
    devices = db.execute(
        "SELECT COUNT(*) FROM NVTX_SCOPES WHERE path LIKE 'AWS EFAs/%'"
    ).fetchone()[0]
    samples = 0
    if devices and _count(db, "GENERIC_EVENTS") and _count(db, "GENERIC_EVENT_TYPE_FIELDS"):
        samples = db.execute(
            "SELECT COUNT(*) FROM GENERIC_EVENTS WHERE typeId IN (SELECT f.typeId FROM "
            "GENERIC_EVENT_TYPE_FIELDS f JOIN StringIds s ON s.id = f.fieldNameId WHERE "
            f"{_EFA_FIELD})"
        ).fetchone()[0]
    return int(devices), int(samples)


# The EFA counters nic_sampler reports (hw_counters of the efa driver).
_EFA_FIELD = " OR ".join(
    f"s.value LIKE '{prefix}%'" for prefix in ("rdma_", "tx_", "rx_", "send_", "recv_")
)


def _diagnostics(db: sqlite3.Connection, where: str) -> list[str]:
    """The texts of nsys's own diagnostics (DIAGNOSTIC_EVENT) that match `where`, in order."""
    if not _count(db, "DIAGNOSTIC_EVENT"):
        return []
    rows = db.execute(
        f"SELECT text FROM DIAGNOSTIC_EVENT WHERE {where} ORDER BY timestamp, text"  # noqa: S608
    ).fetchall()
    return [str(r[0]) for r in rows]


def _plugin_failures(db: sqlite3.Connection) -> list[str]:
    """nsys's own diagnostics about plugins that failed (e.g. "Plugin exited with code 1." when
    nic_sampler finds no EFA device under its sysfs root); a stop by signal is the normal end."""
    return _diagnostics(
        db,
        "text LIKE 'Plugin exited with code %' AND text NOT LIKE 'Plugin exited with code 0%'",
    )


def _dropped_events(db: sqlite3.Connection) -> list[str]:
    """nsys's diagnostics that it dropped CUPTI events (e.g. "8400 incomplete CUPTI events
    dropped"), the first few: what a report without kernels under the CUDA hardware trace
    says about itself."""
    return _diagnostics(db, "text LIKE '%CUPTI%' AND text LIKE '%drop%'")[:3]


def _steps_text(steps: Sequence[int]) -> str:
    if not steps:
        return "none"
    if list(steps) == list(range(steps[0], steps[-1] + 1)):
        return f"{steps[0]}..{steps[-1]}" if len(steps) > 1 else str(steps[0])
    return ",".join(map(str, steps))


def never_opened(expect: dict[str, Any]) -> str:
    """The likely cause when a report holds nothing of the asked capture, by capture mode."""
    capture = expect["capture"]
    mode = capture["mode"]
    if mode == "steps":
        steps = capture.get("steps") or {}
        other = steps.get("unopened", "the program never started the capture")
        return (
            f"window never reached: the job ended before step {capture['first_step']} (or {other})"
        )
    if mode == "nvtx":
        return (
            f"capture range never started: the program never opened NVTX range "
            f"'{capture['nvtx_range']}'"
        )
    if capture.get("delay"):
        return (
            f"window never reached: the program ended before the window opened "
            f"({capture['delay']} s after launch)"
        )
    return "the program ended before nsys recorded anything"


def _check_steps(expect: dict[str, Any], contents: Contents, found: Finding) -> None:
    capture = expect["capture"]
    steps = capture["steps"]
    first, last = capture["first_step"], capture["last_step"]
    numbering = _read_numbering(contents, first, found)
    matches = [m for name in contents.ranges if (m := re.fullmatch(steps["regex"], name))]
    if not matches:
        if steps.get("unmarked") and contents.kernels:
            found.notes.append(steps["unmarked"])
            return
        found.problems.append(f"no step ranges: asked steps {first}..{last}")
        found.causes.append(never_opened(expect))
    elif steps["numbered"]:
        held = sorted({int(m.group(1)) for m in matches})
        if held != list(range(first, last + 1)):
            found.problems.append(f"holds steps {_steps_text(held)}, asked {first}..{last}")
            found.causes.append(_why_steps_differ(held[-1] < last, last))
        if capture.get("optimizer_steps"):
            asked = int(capture["optimizer_steps"])
            _check_optimizer_steps(steps["regex"], asked, numbering, contents, found)
    elif len(matches) != last - first + 1:
        found.problems.append(
            f"holds {len(matches)} steps, asked {last - first + 1} (steps {first}..{last})"
        )
        found.causes.append(_why_steps_differ(len(matches) < last - first + 1, last))


def _read_numbering(contents: Contents, first: int, found: Finding) -> dict[int, Numbering]:
    """How each process's helper numbered its steps (its numbering mark, the first if several),
    kept in the finding for --json; a note where the numbers are not the program's own, or the
    program's counter could not be checked before the window."""
    numbering: dict[int, Numbering] = {}
    for process, _, text in contents.numbering:
        mark = NUMBERING_MARK.fullmatch(text)
        if mark is None or process in numbering or int(mark.group(1)) < 1:
            continue  # not this protocol's mark: the report is checked as without one
        per_step, checked, source, how = mark.groups()
        numbering[process] = Numbering(process, source, how, int(per_step), int(checked))
    for facts in numbering.values():
        found.numbering.append(facts)
        if facts.source == "fallback":
            # Not a failure of the window: its steps are whole and counted, only their numbers
            # are nsysgen's (from 0, or from where the helper began counting).
            found.notes.append(
                f"process {facts.process}: steps numbered by nsysgen's own count, not the "
                f'program\'s counter ({facts.text}): a range "step N" may not be the step the '
                "program's log calls N"
            )
        elif facts.source == "counter" and facts.checked == 0:
            found.notes.append(
                f"process {facts.process}: steps numbered by the program's counter "
                f"{facts.text}, which could not be checked before the window (too few steps "
                f"before step {first})"
            )
    return numbering


def _check_optimizer_steps(
    regex: str,
    asked: int,
    numbering: dict[int, Numbering],
    contents: Contents,
    found: Finding,
) -> None:
    """Every step range holds exactly as many optimizer steps (the helper's marks) as make one
    training step, each marked with the range's own number and, where the program's counter
    numbered the steps, read as that number; no optimizer step falls between the ranges."""
    if not contents.marks:
        found.notes.append(
            "no optimizer-step marks in the report (a helper older than this nsysgen?): "
            "one optimizer step per step range is not checked"
        )
        return
    steps = [
        (process, start, end, int(m.group(1)))
        for process, start, end, name in contents.spans
        if (m := re.fullmatch(regex, name))
    ]
    # Each process steps as its helper learned or was told (its numbering mark), which knows
    # better than the setup (a GAN's 2 optimizers learned at run time); else as the setup asks.
    # Processes that step alike are checked together, as one report always was before.
    processes = {s[0] for s in steps} | {m[0] for m in contents.marks}
    per_process = {p: numbering[p].per_step if p in numbering else asked for p in processes}
    skipped = 0
    for per_step in sorted(set(per_process.values())):
        alike = {p for p, value in per_process.items() if value == per_step}
        skipped += _check_per_step(
            per_step,
            [s for s in steps if s[0] in alike],
            [m for m in contents.marks if m[0] in alike],
            numbering,
            found,
        )
    if skipped:
        found.notes.append(f"{_plural(skipped, 'optimizer step')} skipped by GradScaler (inf/nan)")


def _check_per_step(
    per_step: int,
    steps: list[tuple[int, int, int, int]],
    marks: list[tuple[int, int, str]],
    numbering: dict[int, Numbering],
    found: Finding,
) -> int:
    """The optimizer-step check of the processes that take `per_step` optimizer steps a
    training step; returns how many of their optimizer steps GradScaler skipped."""
    inside, outside = _marks_per_step(steps, marks)
    # A script may push "step N" ranges of its own inside nsysgen's: a range within another of
    # the same step and process counts with it (ranges one after another still count apart).
    grouped: dict[int, list[re.Match[str]]] = {}
    for i, (process, start, end, number) in enumerate(steps):
        outer = next(
            j
            for j, other in enumerate(steps)
            if other[0] == process and other[3] == number and other[1] <= start <= end <= other[2]
        )
        grouped.setdefault(outer, []).extend(inside[i])
    counts = [len(held) for held in grouped.values()]
    names = sorted({f"{m.group(2)}#{m.group(3)}" for held in inside for m in held})
    skipped = sum(1 for held in inside for m in held if m.group(4))
    if per_step == 1 and _take_turns(inside) and max(counts, default=0) <= 1:
        found.problems.append(
            f"{len(names)} optimizers take turns ({', '.join(names)}): each iteration is "
            f"{len(names)} step ranges"
        )
        found.causes.append(
            f"several optimizers step each iteration: set capture.optimizer_steps={len(names)}"
        )
        return skipped  # each optimizer counts its own steps: their numbers say nothing more
    if any(count != per_step for count in counts):
        wrong = [
            (steps[j][3], steps[j][0], len(m)) for j, m in grouped.items() if len(m) != per_step
        ]
        _wrong_counts(per_step, counts, names, found, wrong)
    if outside:
        found.problems.append(f"{_plural(outside, 'optimizer step')} outside the step ranges")
        found.causes.append("the patched loop is not the loop that steps the optimizer")
    offsets = {int(m.group(1)) - steps[i][3] for i, held in enumerate(inside) for m in held}
    if offsets - {0}:
        shift = max(offsets, key=abs)
        found.problems.append(
            f"step numbers differ from the optimizer step's own by {_steps_text(sorted(offsets))}"
        )
        found.causes.append(
            f"step numbers are {abs(shift)} {'below' if shift > 0 else 'above'} the number "
            "read at the optimizer step: the counter jumps, or the step numbering is wrong"
        )
    _check_counter_reads(steps, inside, numbering, found)
    return skipped


def _check_counter_reads(
    steps: list[tuple[int, int, int, int]],
    inside: list[list[re.Match[str]]],
    numbering: dict[int, Numbering],
    found: Finding,
) -> None:
    """Where the program's counter numbered the steps, each optimizer step's reading of it (the
    mark's " | <counter> = <value>") is its range's number. The helper checked the counter before
    the window; one that jumps or restarts inside it (an epoch reset, a resume) is seen only
    here, and then a range's number is not the step the program logs under that number."""
    wrong = []
    for (process, _, _, number), held in zip(steps, inside, strict=True):
        if process in numbering and numbering[process].source != "counter":
            continue  # nsysgen's count numbered them: the counter's readings are not the numbers
        for mark in held:
            read = COUNTER_READ.fullmatch(mark.string, mark.end())
            if read is None or int(read.group(2)) == number:
                continue
            value = int(read.group(2))
            wrong.append(
                f"step {number} of process {process}: {read.group(1)} read {value} at its "
                f"optimizer step ({value - number:+d})"
            )
            break  # one reading a range: the others of the same step say the same
    if wrong:
        more = f" and {len(wrong) - 4} more" if len(wrong) > 4 else ""
        found.problems.append("; ".join(wrong[:4]) + more)
        found.causes.append(
            "the program's counter jumped or restarted inside the window (an epoch reset, a "
            'resume): a range "step N" may hold another step than the one the program logs '
            "as N"
        )


def _marks_per_step(
    steps: list[tuple[int, int, int, int]], marks: list[tuple[int, int, str]]
) -> tuple[list[list[re.Match[str]]], int]:
    """The helper's marks inside each step range (same process), and how many fall between."""
    inside: list[list[re.Match[str]]] = [[] for _ in steps]
    outside = 0
    low = min((s[1] for s in steps), default=0)
    high = max((s[2] for s in steps), default=-1)
    for process, moment, text in marks:
        mark = OPTIMIZER_MARK.match(text)
        if mark is None:
            continue
        held = [i for i, s in enumerate(steps) if s[0] == process and s[1] <= moment <= s[2]]
        if held:
            # The script may name ranges "step N" too: the mark's own step, else the innermost.
            same = [i for i in held if steps[i][3] == int(mark.group(1))]
            inside[(same or held)[-1]].append(mark)
        elif low <= moment <= high:
            outside += 1
    return inside, outside


def _take_turns(inside: list[list[re.Match[str]]]) -> bool:
    """Several optimizers alternate (A B A B), not one replaced by another (A A B B)."""
    left: set[str] = set()
    last = None
    for name in (f"{m.group(2)}#{m.group(3)}" for marks in inside for m in marks):
        if name != last:
            if name in left:
                return True
            if last is not None:
                left.add(last)
            last = name
    return False


def _wrong_counts(
    per_step: int,
    counts: list[int],
    names: list[str],
    found: Finding,
    wrong: list[tuple[int, int, int]],
) -> None:
    """`wrong`: (step, process, optimizer steps held) of each range that holds another count."""
    without, most = counts.count(0), max(counts)
    listed = ", ".join(f"step {step} of process {pid}: {held}" for step, pid, held in wrong[:4])
    more = f" and {len(wrong) - 4} more" if len(wrong) > 4 else ""
    found.problems.append(
        f"{_plural(per_step, 'optimizer step')} per step asked; the step ranges hold "
        f"{_steps_text(sorted(set(counts)))} ({listed}{more})"
    )
    if without and sum(counts):
        ratio = round(len(counts) / sum(counts))
        found.causes.append(
            f"{ratio} ranges per optimizer step: the patched loop is a micro-batch loop, "
            "not the step loop"
            if ratio > 1
            else "some step ranges hold no optimizer step"
        )
    if most > per_step:
        found.causes.append(
            f"several optimizers step in one step ({', '.join(names)}): set "
            f"capture.optimizer_steps={most}"
            if len(names) > 1
            else f"{most} optimizer steps in one step range: the patched loop is not the "
            "step loop (an epoch loop?)"
        )


def _plural(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _why_steps_differ(short: bool, last: int) -> str:
    if short:
        return f"the job ended (or was stopped) before step {last}"
    return "the capture did not open and close at the asked steps"


def _check_window(
    capture: dict[str, Any], tolerance_s: float, got: float | None, found: Finding
) -> None:
    asked = float(capture["duration"])
    tolerance = max(tolerance_s, asked * 0.1)
    if got is None:
        found.notes.append("capture length not in the report: not checked")
    elif abs(got - asked) > tolerance:
        found.problems.append(
            f"capture lasted {got:.1f} s, asked {asked:g} s (tolerance {tolerance:.1f} s)"
        )
        found.causes.append(
            "the program ended (or the job was stopped) before the window's end"
            if got < asked
            else "the capture was not stopped at the window's end"
        )


def _check_capture(expect: dict[str, Any], contents: Contents, found: Finding) -> None:
    capture = expect["capture"]
    if capture["mode"] == "steps" and capture.get("steps"):
        _check_steps(expect, contents, found)
    elif capture["mode"] == "nvtx" and capture["nvtx_range"] not in contents.ranges:
        found.problems.append(f"no NVTX range '{capture['nvtx_range']}'")
        found.causes.append(never_opened(expect))
    elif capture["mode"] == "window" and capture.get("duration"):
        _check_window(capture, float(expect["tolerance_s"]), contents.duration_s, found)


def _check_traced(trace: set[str], contents: Contents, found: Finding) -> None:
    if trace & {"cuda", "cuda-sw", "cuda-hw"} and contents.kernels == 0:
        found.problems.append("no CUDA kernels although cuda is traced")
        if contents.dropped:
            found.causes.append(
                f"nsys dropped CUDA events ({'; '.join(contents.dropped)}): the CUDA hardware "
                "trace (Blackwell, nsys 2026.x) loses them in a capture that starts or stops "
                "while the program runs; trace cuda-sw (capture.cuda_trace=auto or software)"
            )
        else:
            found.causes.append(
                "no GPU work inside the capture (window outside the training loop), or CUDA "
                "tracing failed (CUPTI errors in the job log)"
            )
    if "nvtx" in trace and not contents.ranges:
        found.problems.append("no NVTX ranges although nvtx is traced")
        found.causes.append(
            "the program emits no NVTX ranges in the window (PyPI nvtx >= 0.2.12 records none "
            "under nsys 2023.4)"
        )
    if "osrt" in trace and contents.osrt == 0:
        found.problems.append("no OS runtime calls although osrt is traced")
        found.causes.append("OS runtime tracing failed to inject (see the job log)")


def _check_collectors(
    planned: dict[str, Any], collectors: bool, contents: Contents, found: Finding
) -> None:
    if planned.get("gpu_metrics"):
        if collectors and contents.gpu_metrics == 0:
            found.problems.append("no GPU metrics although this report should hold them")
            found.causes.append("GPU metrics need counter access (ERR_NVGPUCTRPERM) on the node")
        if not collectors and contents.gpu_metrics:
            found.problems.append("GPU metrics in a report that should not collect them")
            found.causes.append("a second collector per node: the samples are duplicated")
    if planned.get("efa_metrics"):
        _check_efa(collectors, contents, found)


def _check_efa(collectors: bool, contents: Contents, found: Finding) -> None:
    if collectors and contents.efa_samples == 0:
        found.problems.append("no EFA metrics although this report should hold them")
        failed = "; ".join(contents.plugin_failures)
        found.causes.append(
            (f'nsys says "{failed}": ' if failed else "")
            + "the efa_metrics plugin found no EFA device (nic_sampler reads "
            "/sys/class/infiniband/<device>/ports/<port>/hw_counters: on EKS mount it into the "
            "container or pass -efa-sysfs), or the plugin is missing from this nsys build"
        )
    elif collectors:
        found.notes.append(
            f"EFA metrics: {contents.efa_samples} samples of {contents.efa_devices} device ports"
        )
    if not collectors and contents.efa_samples:
        found.problems.append("EFA metrics in a report that should not collect them")
        found.causes.append("a second collector per node: the samples are duplicated")


def check_contents(expect: dict[str, Any], contents: Contents, collectors: bool) -> Finding:
    """What is wrong with a readable report: the capture, the traced APIs, the collectors."""
    found = Finding(label="", node="", status="ok")
    _check_capture(expect, contents, found)
    _check_traced(set(expect["trace"]), contents, found)
    _check_collectors(expect["collectors"], collectors, contents, found)
    if found.problems:
        found.status = "wrong"
    return found


# ---------------------------------------------------------------------------------------------
# The whole job


def _teardown_cause(folder: Path | None, job_id: str | None) -> str | None:
    """What the Slurm log of the job says about how it ended, if it is in the folder."""
    if folder is None or job_id is None:
        return None
    for log in sorted(folder.glob(f"*_{job_id}.out")):
        text = log.read_text(encoding="utf-8", errors="replace")
        if "DUE TO TIME LIMIT" in text:
            return "the job hit its time limit"
        if "CANCELLED AT" in text:
            return "the job was cancelled"
    return None


def verify(
    expect: dict[str, Any],
    reports: Path,
    job_id: str | None = None,
    nsys: str | None = None,
    importer: str | None = None,
    folder: Path | None = None,
    presence_only: bool = False,
) -> Result:
    run = select_run(expect, reports, job_id)
    report_dir, job_id = run.folder, run.job_id
    files = _report_files(report_dir)
    notes = [note for note in [_other_runs_note(expect, run)] if note]
    # Reports of other jobs in the same folder (copied or fetched together) are not this run's:
    # they are named, never checked, and never make this run incomplete.
    foreign = [p for p in files if job_id and _job_of(expect, p) not in (None, job_id)]
    if foreign:
        jobs = sorted({_job_of(expect, p) or "" for p in foreign}, key=int)
        notes.append(
            f"{len(foreign)} report file(s) of other jobs in {report_dir} ({', '.join(jobs)}), "
            "not read"
        )
        files = [p for p in files if p not in foreign]
    tools = find_tools(expect, nsys, importer)
    if tools.nsys is None and not presence_only:
        raise BadInput(
            "no nsys found to read the reports: pass --nsys or set NSYS (or --presence-only "
            "to check only that every report is there and not empty)"
        )
    if presence_only:
        notes.append("--presence-only: reports were not read, their contents are not checked")
    wanted = expect["nsys_version"]
    if tools.version and not tools.version.startswith(wanted):
        notes.append(f"reports read with nsys {tools.version}; the setup's is {wanted}")
    nodes = _node_names(report_dir)
    teardown = _teardown_cause(folder, job_id)
    claimed: set[Path] = set()
    findings = []
    by_stem: dict[str, list[Path]] = {}
    for path in files:
        by_stem.setdefault(_stem(path), []).append(path)
    for entry in expected_reports(expect):
        mine, node_name = _match_entry(
            entry, files, by_stem, job_id, nodes.get(entry["node"]), expect["job_in_name"]
        )
        finding = _check_one(
            expect, entry, mine, report_dir, job_id, node_name, tools, presence_only
        )
        if finding.status != "ok" and teardown:
            finding.causes.insert(0, teardown)
        claimed |= set(mine) | {p.with_suffix(".nsys-rep") for p in mine}
        findings.append(finding)
    _blame_missing_tasks(findings)
    findings.extend(_extras(expect, [p for p in files if p not in claimed]))
    return Result(expect["job"], job_id, str(report_dir), wanted, findings, notes)


def _blame_missing_tasks(findings: list[Finding]) -> None:
    """When other reports of the job are there, a missing one is about its own task."""
    if any(f.status == "ok" for f in findings):
        for finding in findings:
            if finding.status == "missing":
                finding.causes.insert(
                    0,
                    "other reports of the job are there: this task failed or ran without nsys "
                    "(see its lines in the job log), or its report was moved or deleted",
                )


def _match_entry(
    entry: dict[str, Any],
    files: list[Path],
    by_stem: dict[str, list[Path]],
    job_id: str | None,
    node_name: str | None,
    job_in_name: bool,
) -> tuple[list[Path], str | None]:
    """The files of one expected report, and its node's name: as nsys wrote it into the report's
    name, else from the job's node record (job.sbatch writes it). When every part of the name is
    known, a lookup; else a match over the folder's files."""
    fmt = entry["name"]
    if fmt is not None and (job_id or not job_in_name) and (node_name or "{node}" not in fmt):
        return by_stem.get(fmt.format(job=job_id, node=node_name), []), node_name
    regex = re.compile(entry["regex"].replace("(?P<job>[0-9]+)", re.escape(job_id or "")))
    mine = [p for p in files if regex.fullmatch(_stem(p))]
    for path in mine:
        match = regex.fullmatch(_stem(path))
        if match and match.groupdict().get("node"):
            node_name = match.group("node")
    return mine, node_name


def _expected_name(
    expect: dict[str, Any], entry: dict[str, Any], job_id: str | None, node: str | None
) -> str | None:
    """The report's file name without suffix, when every part of it is known."""
    fmt = entry.get("name")
    if fmt is None or (expect["job_in_name"] and not job_id) or ("{node}" in fmt and not node):
        return None
    return str(fmt.format(job=job_id, node=node))


def _state_dirs(report_dir: Path, entry: dict[str, Any]) -> list[Path]:
    """nsys's TMPDIR of the entry's task (Slurm: task<N>) or pod (EKS: the pod's name, which
    JobSet follows with a random suffix) under the run's .nsysgen/."""
    state = report_dir / STATE_DIR
    pod = entry.get("pod")
    if pod is None:
        task = state / f"task{entry['task']}"
        return [task] if task.is_dir() else []
    if not state.is_dir():
        return []
    found = [
        d for d in state.iterdir() if d.is_dir() and (d.name == pod or d.name.startswith(pod + "-"))
    ]
    return sorted(found, key=lambda d: d.stat().st_mtime, reverse=True)  # a retried pod's newest


def _salvage(
    expect: dict[str, Any],
    entry: dict[str, Any],
    qdstrms: list[Path],
    report_dir: Path,
    job_id: str | None,
    name: str | None,
    tools: Tools,
    finding: Finding,
) -> Path | None:
    """Convert a .qdstrm left by a killed nsys (in the report folder, or in the task's temp dir
    under .nsysgen/) into the report; None if there is none or it does not convert."""
    salvage = qdstrms[:1]
    for state in _state_dirs(report_dir, entry):
        if not salvage:
            salvage = sorted(state.rglob("*.qdstrm"))[:1]
    if not salvage:
        return None
    source = salvage[0]
    target = (
        source.with_suffix(".nsys-rep")
        if source.parent == report_dir
        else report_dir / f"{name or _stem(source)}.nsys-rep"
    )
    why = convert(tools, source, target)
    if why:
        finding.status = "unreadable"
        finding.report = str(source)
        finding.problems.append(f"only a .qdstrm, which does not convert: {why}")
        finding.causes.append(
            "nsys was killed while capturing or writing (time limit or cancel: see README, "
            "Teardown)"
        )
        return None
    finding.notes.append(
        f"converted leftover {source.name} with QdstrmImporter of nsys "
        f"{tools.version or expect['nsys_version']}"
    )
    return target


def _check_one(
    expect: dict[str, Any],
    entry: dict[str, Any],
    mine: list[Path],
    report_dir: Path,
    job_id: str | None,
    node_name: str | None,
    tools: Tools,
    presence_only: bool,
) -> Finding:
    node = f"{node_name} ({entry['node']})" if node_name else f"node index {entry['node']}"
    finding = Finding(label=entry["label"], node=node, status="ok")
    reps = [p for p in mine if p.suffix == ".nsys-rep"]
    qdstrms = [p for p in mine if p.suffix == ".qdstrm"]
    name = _expected_name(expect, entry, job_id, node_name)
    report = reps[0] if reps else None
    if report is None:
        report = _salvage(expect, entry, qdstrms, report_dir, job_id, name, tools, finding)
        if finding.status != "ok":
            return finding
    if report is None:
        finding.status = "missing"
        finding.report = f"{name}.nsys-rep" if name else None
        finding.problems.append("no report")
        finding.causes.append(never_opened(expect))
        finding.causes.append("or the task was killed before nsys wrote anything")
        if expect.get("cut_off"):
            finding.causes.append(expect["cut_off"])
        return finding
    finding.report = report.name
    for extra in reps[1:]:
        finding.notes.append(f"also matches {extra.name}")
    if report.stat().st_size == 0:
        finding.status = "empty"
        finding.problems.append("the report is empty (0 bytes)")
        finding.causes.append("nsys was killed while writing it")
        return finding
    if presence_only:
        return finding
    sqlite_file, why = export_sqlite(tools, report)
    if sqlite_file is None:
        finding.status = "unreadable"
        finding.problems.append(f"not readable by nsys {tools.version}: {why}")
        finding.causes.append("a truncated report: nsys was killed while writing it")
        return finding
    try:
        contents = read_contents(sqlite_file)
    except sqlite3.Error as error:
        finding.status = "unreadable"
        finding.problems.append(f"its SQLite export is unreadable ({error})")
        return finding
    checked = check_contents(expect, contents, entry["collectors"])
    finding.status = checked.status
    finding.problems += checked.problems
    finding.causes += checked.causes
    finding.notes += checked.notes
    finding.numbering += checked.numbering
    return finding


def _extras(expect: dict[str, Any], files: list[Path]) -> list[Finding]:
    findings = []
    generic = expect["generic_regex"]
    for path in files:
        if path.suffix == ".qdstrm" and path.with_suffix(".nsys-rep") not in files:
            pass
        elif path.suffix == ".qdstrm":
            continue  # the .nsys-rep of the same name is the one reported
        finding = Finding(label="extra", node="", status="extra", report=path.name)
        match = re.fullmatch(generic, _stem(path)) if generic else None
        values = {k: v for k, v in (match.groupdict() if match else {}).items() if v}
        if match:
            who = values.get("SLURM_PROCID") or values.get("SLURM_NODEID") or "?"
            finding.node = values.get("SLURMD_NODENAME", "")
            finding.problems.append(f"task {who} recorded but should not")
            finding.causes.append("the wrapper's rank selection differs from this setup's")
        else:
            finding.problems.append("not a report name of this setup")
            finding.causes.append("a stray file in the report folder")
        findings.append(finding)
    return findings


# ---------------------------------------------------------------------------------------------
# Output


def as_json(result: Result) -> str:
    data = {
        "job": result.job,
        "job_id": result.job_id,
        "report_dir": result.report_dir,
        "nsys_version": result.nsys_version,
        "complete": result.complete,
        "exit_code": result.exit_code,
        "reports": [asdict(f) for f in result.findings if f.status != "extra"],
        "extras": [asdict(f) for f in result.findings if f.status == "extra"],
        "notes": result.notes,
    }
    return json.dumps(data, indent=1, sort_keys=True)


def as_table(result: Result) -> str:
    expected = [f for f in result.findings if f.status != "extra"]
    job = f"job {result.job}" + (f" ({result.job_id})" if result.job_id else "")
    lines = [f"verify: {job}: {len(expected)} reports expected in {result.report_dir}"]
    rows = [(f.label, f.node, f.status.upper(), f.report or "-") for f in result.findings]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEAD)]
    lines.append(_row(_HEAD, widths))
    for finding, row in [(f, rows[i]) for i, f in enumerate(result.findings)]:
        lines.append(_row(row, widths))
        lines += [f"    problem: {p}" for p in finding.problems]
        lines += [f"    likely cause: {c}" for c in finding.causes]
        lines += [f"    note: {n}" for n in finding.notes]
    lines += [f"note: {n}" for n in result.notes]
    bad = [f for f in expected if f.status != "ok"]
    extras = len(result.findings) - len(expected)
    if result.complete:
        lines.append(f"verify: complete: {len(expected)} of {len(expected)} reports ok")
    else:
        lines.append(
            f"verify: INCOMPLETE: {len(bad)} of {len(expected)} reports missing or wrong, "
            f"{extras} unexpected"
        )
    return "\n".join(lines)


_HEAD = ("task", "node", "status", "report")


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells)).rstrip()


def main(argv: Sequence[str] | None = None, prog: str = "nsysgen-verify.py") -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Check that a profiled job's reports are all there and hold what was asked.",
        epilog=(
            f"examples:\n  {prog} generated/fsdp-p4de\n"
            f"  {prog} generated/fsdp-p4de --job-id 1234 --json\n\n"
            "Exit codes: 0 complete, 1 missing or wrong reports, 2 bad input."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "folder",
        type=Path,
        nargs="?",
        metavar="FOLDER",
        help=f"the compiled setup folder (holding {EXPECT_FILE})",
    )
    parser.add_argument("--reports", type=Path, help="report folder (default: the setup's)")
    parser.add_argument("--job-id", help="the run to check (default: the newest)")
    parser.add_argument("--nsys", help="nsys to read reports with (default: $NSYS, the setup's)")
    parser.add_argument("--importer", help="QdstrmImporter (default: $QDSTRM_IMPORTER, setup's)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--run-folder",
        action="store_true",
        help="print the folder of the run that would be checked (the newest, or --job-id's) "
        "and exit: what recipes.sh and analyze.sbatch read",
    )
    parser.add_argument(
        "--presence-only",
        action="store_true",
        help="without nsys: check only that every report is there, named right and not empty",
    )
    # FOLDER is required, but parsed as optional so that its absence is refused in verify's own
    # words (what a setup folder is), not argparse's; the usage shows it as required.
    parser.usage = parser.format_usage().removeprefix("usage: ").replace("[FOLDER]", "FOLDER")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return EXIT_OK if stop.code == 0 else EXIT_BAD_INPUT
    folder = args.folder
    try:
        expect = load_expect(folder)
        report_dir = args.reports or Path(expect["report_dir"])
        if args.run_folder:
            print(select_run(expect, report_dir, args.job_id).folder)
            return EXIT_OK
        result = verify(
            expect,
            report_dir,
            args.job_id,
            args.nsys,
            args.importer,
            folder,
            args.presence_only,
        )
    except BadInput as error:
        print(f"verify: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(as_json(result) if args.json else as_table(result))
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
