"""A large synthetic nsys SQLite export, shaped like a real one of a stepped training loop, for
timing `nsysgen analyze`'s reading and reduction where no GPU report of that size exists.

Each step: an NVTX "step N" range on the main thread, KERNELS compute kernels launched from it
(some overlapping on a second stream), two NCCL all-reduce kernels with NCCL's NVTX ranges, and
one memcpy. Columns and types follow what nsys 2025.3.1 exports for those tables.

    python bench/synth_export.py OUT.sqlite [--steps 2800] [--kernels 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=2800)
    parser.add_argument("--kernels", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    build(args.out, args.steps, args.kernels, args.seed)


if __name__ == "__main__":
    main()
