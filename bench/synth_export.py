"""A large synthetic nsys SQLite export, shaped like a real one of a stepped training loop, for
timing `nsysgen analyze`'s reading and reduction where no GPU report of that size exists.

Each step: an NVTX "step N" range on the main thread, KERNELS compute kernels launched from it
(some overlapping on a second stream), two NCCL all-reduce kernels with NCCL's NVTX ranges, and
one memcpy. Columns and types follow what nsys 2025.3.1 exports for those tables.

    python bench/synth_export.py OUT.sqlite [--steps 2800] [--kernels 100] [--seed 0]

A job's exports, one per rank (`job(...)` below), each named `synth_job1_rankR_nodeN.sqlite`
as nsysgen's wrapper names reports: data-parallel ranks that run the same kernels each step
(a microsecond of jitter apart), then the same NCCL all-reduces (one per message size), each
NCCL kernel ending on every rank once the last rank has arrived, its message size in NCCL's NVTX
payload as nsys 2025.3.1 exports it with --include-blobs. Each node's clock is off by its own
amount (only durations on one rank's clock may be compared). Planted: ranks late on given steps
by given ms (they sleep at the step's start, as bench/gpu/x2.sh's slow rank does), and one
message size slower than the fabric (its bus bandwidth divided by SLOW_FACTOR).

    python bench/synth_export.py --ranks 64 OUT_DIR [--late 5:9,12:30] [--slow-size 1048576]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PID = 31337
TID = (PID << 24) | 1
GPID = PID << 24
SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,
  returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,
  blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER,
  dynamicSharedMemory INTEGER, localMemoryPerThread INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER, copyKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, value INTEGER, bytes INTEGER);
"""
NAMES = ["ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel", "reduce_kernel",
         "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "NCCL", "ncclAllReduce"]  # fmt: skip


def build(path: Path, steps: int, kernels: int, seed: int) -> None:
    rng = random.Random(seed)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", enumerate(NAMES, 1))
    Row = tuple[object, ...]
    nvtx: list[Row] = []
    runtime: list[Row] = []
    kernel: list[Row] = []
    memcpy: list[tuple[int, ...]] = []
    nvtx.append((0, None, 75, None, None, None, "NCCL", TID) + (None,) * 2 + (1,) + (None,) * 9)
    cpu, corr = 1_000_000, 0
    for step in range(steps):
        step_start, gpu = cpu, cpu + 20_000
        launches = []
        for k in range(kernels):
            corr += 1
            cpu += rng.randint(4_000, 6_000)
            length = rng.randint(2_000, 9_000)
            begin = max(gpu, cpu + 5_000) - (length // 2 if k % 7 == 3 else 0)
            gpu = begin + length
            launches.append((corr, cpu, begin, gpu, 1 + k % 3))
        for size in (1 << 20, 1 << 24):
            corr += 1
            cpu += 8_000
            begin = max(gpu, cpu + 5_000)
            gpu = begin + size // 4_000
            launches.append((corr, cpu, begin, gpu, 4))
            nvtx.append((cpu - 2_000, cpu + 3_000, 59, None, None, None, None, TID, None, 6, 1)
                        + (None,) * 9)  # fmt: skip
        corr += 1
        cpu += 3_000
        memcpy.append((max(gpu, cpu + 4_000), max(gpu, cpu + 4_000) + 1_500, 0, 1, 7, corr,
                       GPID, 4096, 2))  # fmt: skip
        runtime.append((cpu, cpu + 2_000, 1, TID, corr, 6, 0, None))
        gpu = memcpy[-1][1]
        for c, at, begin, end, name in launches:
            runtime.append((at, at + 3_000, 1, TID, c, 6, 0, None))
            kernel.append((begin, end, 0, 1, None, 7 + (name == 4), c, GPID, name, name, name)
                          + (1,) * 6 + (32, 0, 0, 0))  # fmt: skip
        cpu = max(cpu, gpu) + 10_000
        nvtx.append((step_start, cpu, 59, None, None, None, f"step {step}", TID) + (None,) * 12)
    db.executemany(f"INSERT INTO NVTX_EVENTS VALUES ({','.join('?' * 20)})", nvtx)
    db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({','.join('?' * 8)})", runtime)
    db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * 21)})", kernel)
    db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ({','.join('?' * 9)})", memcpy)
    db.commit()
    db.close()


# --- A job's exports, one per rank -------------------------------------------------------------

# NCCL's payload schema of a collective's NVTX range, as nsys 2025.3.1 exports it (the ids, types
# and offsets of tests/data/gpu/nccl-allreduce-blobs.sqlite): communicator, message size, op.
PAYLOAD_SCHEMA = 16777221
PAYLOAD_TABLES = """
CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER,
  flags INTEGER, numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER);
CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL,
  idx INTEGER NOT NULL, flags INTEGER, type INTEGER, name TEXT, description TEXT,
  arrayOrUnionDetail INTEGER, offset INTEGER);
"""
PAYLOAD_ENTRIES = [(0, 18, "NCCL communicator ID", None), (1, 22, "Message size [bytes]", 8),
                   (2, 16777236, "Reduction operation", 16)]  # fmt: skip
RANK_NAMES = ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_execute_kernel_cublas",
              "vectorized_elementwise_kernel", "reduce_kernel", "elementwise_kernel",
              "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "NCCL", "ncclAllReduce",
              "cudaLaunchKernel_v7000", "cuLaunchKernelEx", "cudaMemcpyAsync_v3020",
              "ncclDevKernel_SendRecv"]  # fmt: skip
NCCL_KERNEL, NCCL_DOMAIN, NCCL_OP, LAUNCH, NCCL_LAUNCH, MEMCPY = 5, 6, 7, 8, 9, 10
SLOW_FACTOR = 20.0  # a planted slow size gets this much less bus bandwidth
US = 1_000


@dataclass(frozen=True)
class Shape:
    """The job: its ranks, recorded steps, and what each step runs."""

    ranks: int = 8
    steps: range = range(8, 16)
    kernels: int = 20  # compute kernels per step, alike on every rank
    sizes: tuple[int, ...] = (1 << 24, 1 << 20, 1 << 16)  # one all-reduce each, in this order
    busbw_GBps: float = 100.0  # what the fabric gives every size but a planted slow one
    latency_us: float = 6.0
    kernel_us: tuple[int, int] = (200, 600)
    gpus_per_node: int = 8
    job: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Plant:
    """What the analysis must find: rank -> step -> ms late, and a slow message size."""

    late: dict[int, dict[int, float]] = field(default_factory=dict)
    slow_size: int | None = None


@dataclass
class Truth:
    """One rank's figures as generated, for tests to compare the analysis with."""

    kernel_ns: int = 0
    kernels: int = 0
    nccl_ns: int = 0
    nccl_kernels: int = 0
    step_ns: dict[int, int] = field(default_factory=dict)  # step: CPU entry to its last GPU work


def report_name(shape: Shape, rank: int) -> str:
    return f"synth_job{shape.job}_rank{rank}_node{rank // shape.gpus_per_node}"


def _jitter(*parts: int) -> int:
    """0..999 ns, the same for the same parts: ranks differ by about a microsecond."""
    value = 0
    for part in parts:
        value = (value * 1_000_003 + part * 2_654_435_761) % 4_294_967_291
    return value % 1000


def _lengths(shape: Shape, step: int) -> list[int]:
    rng = random.Random(shape.seed * 1_000_003 + step)
    return [rng.randint(*shape.kernel_us) * US for _ in range(shape.kernels)]


def _transfer_ns(shape: Shape, size: int, slow: int | None) -> int:
    world = shape.ranks
    factor = 2 * (world - 1) / world if world > 1 else 1.0  # all-reduce's bus factor
    busbw = shape.busbw_GBps / (SLOW_FACTOR if size == slow else 1.0)  # GB/s = bytes per ns
    return int(shape.latency_us * US + size * factor / busbw)


@dataclass
class _Timeline:
    """The job's global moments: each step's start, and each collective's end (before jitter)."""

    start: dict[int, int] = field(default_factory=dict)
    ends: dict[int, list[int]] = field(default_factory=dict)


def _late_ns(plant: Plant, rank: int, step: int) -> int:
    return int(plant.late.get(rank, {}).get(step, 0.0) * 1_000_000)


def _timeline(shape: Shape, plant: Plant) -> _Timeline:
    line, now = _Timeline(), 1_000_000_000
    for step in shape.steps:
        line.start[step] = now
        work = 10 * US + sum(_lengths(shape, step))
        arrive = [
            now + _late_ns(plant, r, step) + work
            + sum(_jitter(r, step, k) for k in range(shape.kernels))
            for r in range(shape.ranks)
        ]  # fmt: skip
        ends = []
        for c, size in enumerate(shape.sizes):
            end = max(arrive) + _transfer_ns(shape, size, plant.slow_size)
            ends.append(end)
            arrive = [end + _jitter(r, step, 1000 + c) + 2 * US for r in range(shape.ranks)]
        line.ends[step] = ends
        now = max(arrive) + 1_500 + 10 * US + 20 * US  # the last copy, the sync, the next step
    return line


def _rank_rows(
    shape: Shape, plant: Plant, line: _Timeline, rank: int
) -> tuple[dict[str, list[tuple[object, ...]]], Truth]:
    node = rank // shape.gpus_per_node
    offset = node * 2_500_000_123  # each node's clock is its own
    pid = 40_000 + rank
    tid, gpid, device = (pid << 24) | 1, pid << 24, rank % shape.gpus_per_node
    rows: dict[str, list[tuple[object, ...]]] = {
        "nvtx": [],
        "runtime": [],
        "kernel": [],
        "memcpy": [],
    }
    truth = Truth()
    nulls9 = (None,) * 9
    rows["nvtx"].append((offset, None, 75, None, None, None, "NCCL", tid, None, None, 1, *nulls9))
    corr = 0

    def launch(at: int, name: int, begin: int, end: int, kernel: int, stream: int) -> None:
        nonlocal corr
        corr += 1
        rows["runtime"].append((at + offset, at + offset + 3 * US, 1, tid, corr, name, 0, None))
        rows["kernel"].append(
            (
                begin + offset,
                end + offset,
                device,
                1,
                None,
                stream,
                corr,
                gpid,
                kernel,
                kernel,
                kernel,
                1,
                1,
                1,
                128,
                1,
                1,
                32,
                0,
                0,
                0,
            )
        )
        truth.kernel_ns += end - begin
        truth.kernels += 1

    for step in shape.steps:
        start = line.start[step]
        cpu = start + _late_ns(plant, rank, step) + 5 * US  # a late rank sleeps first
        gpu = cpu + 5 * US
        for k, length in enumerate(_lengths(shape, step)):
            end = gpu + length + _jitter(rank, step, k)
            launch(cpu, LAUNCH, gpu, end, 1 + k % 4, 7)
            cpu, gpu = cpu + 5 * US, end
        for c, size in enumerate(shape.sizes):
            cpu += 8 * US
            blob = struct.pack("<QQQQQQQ", 1, PAYLOAD_SCHEMA, 24, 32, 0x74D9D685C590B660, size, 0)
            rows["nvtx"].append(
                (
                    cpu - 2 * US + offset,
                    cpu + 3 * US + offset,
                    59,
                    None,
                    None,
                    None,
                    None,
                    tid,
                    None,
                    NCCL_OP,
                    1,
                    *(None,) * 8,
                    blob,
                )
            )
            end = line.ends[step][c] + _jitter(rank, step, 1000 + c)
            launch(cpu, NCCL_LAUNCH, gpu, end, NCCL_KERNEL, 13)
            truth.nccl_ns += end - gpu
            truth.nccl_kernels += 1
            gpu = end + 2 * US
        corr += 1
        rows["runtime"].append(
            (cpu + 3 * US + offset, cpu + 5 * US + offset, 1, tid, corr, MEMCPY, 0, None)
        )
        rows["memcpy"].append(
            (gpu + offset, gpu + 1_500 + offset, device, 1, 7, corr, gpid, 4096, 2)
        )
        finish = gpu + 1_500
        truth.step_ns[step] = finish - start
        rows["nvtx"].append((start + offset, finish + 10 * US + offset, 59, None, None, None,
                             f"step {step}", tid, None, None, 0, *nulls9))  # fmt: skip
    return rows, truth


def _write(path: Path, rows: dict[str, list[tuple[object, ...]]]) -> None:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    # No journal, no fsync: a thousand small files in seconds, not a minute of disk flushes.
    db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA + PAYLOAD_TABLES)
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", enumerate(RANK_NAMES, 1))
    db.execute("INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, ?, NULL, 1, NULL, 3, 24, NULL)",
               (PAYLOAD_SCHEMA,))  # fmt: skip
    db.executemany(
        "INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, ?, ?, NULL, ?, ?, NULL, NULL, ?)",
        [(PAYLOAD_SCHEMA, *entry) for entry in PAYLOAD_ENTRIES],
    )
    tables = [
        ("NVTX_EVENTS", "nvtx", 20),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "runtime", 8),
        ("CUPTI_ACTIVITY_KIND_KERNEL", "kernel", 21),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy", 9),
    ]
    for table, key, width in tables:
        db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * width)})", rows[key])
    db.commit()
    db.close()


def job(
    folder: Path, shape: Shape, plant: Plant, ranks: Iterable[int] | None = None
) -> dict[int, Truth]:
    """Write the job's exports (of `ranks`, default all) into `folder`; each rank's truth."""
    folder.mkdir(parents=True, exist_ok=True)
    line = _timeline(shape, plant)
    truths = {}
    for rank in range(shape.ranks) if ranks is None else ranks:
        rows, truths[rank] = _rank_rows(shape, plant, line, rank)
        _write(folder / f"{report_name(shape, rank)}.sqlite", rows)
    return truths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the export (one rank), or a folder (--ranks)")
    parser.add_argument("--steps", type=int, default=None, help="one rank: 2800; --ranks: 8")
    parser.add_argument("--kernels", type=int, default=None, help="one rank: 100; --ranks: 20")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ranks", type=int, help="a job's exports, one per rank, into OUT")
    parser.add_argument("--first-step", type=int, default=8)
    parser.add_argument(
        "--late", action="append", default=[], metavar="RANK:STEP,STEP:MS",
        help="a rank late on those steps by MS (repeatable)",
    )  # fmt: skip
    parser.add_argument("--slow-size", type=int, help="a message size (bytes) slow on the fabric")
    args = parser.parse_args()
    if args.ranks is None:
        build(args.out, args.steps or 2800, args.kernels or 100, args.seed)
        return
    late: dict[int, dict[int, float]] = {}
    for spec in args.late:
        rank, steps, ms = spec.split(":")
        late.setdefault(int(rank), {}).update({int(s): float(ms) for s in steps.split(",")})
    shape = Shape(
        ranks=args.ranks, steps=range(args.first_step, args.first_step + (args.steps or 8)),
        kernels=args.kernels or 20, seed=args.seed,
    )  # fmt: skip
    job(args.out, shape, Plant(late, args.slow_size))


if __name__ == "__main__":
    main()
