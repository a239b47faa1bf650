"""A light CPU program for the teardown measurements: NVTX "step N" ranges that mostly sleep, so
many jobs can run at once on a small machine. Needs PyPI nvtx<=0.2.11 under nsys 2023.4.4."""

from __future__ import annotations

import sys
import time

import nvtx

steps, seconds = int(sys.argv[1]), float(sys.argv[2])
for step in range(steps):
    with nvtx.annotate(f"step {step}"):
        time.sleep(seconds)
