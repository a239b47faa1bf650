"""`python -m nsysgen.dask_cluster`, the command every generated analyze.sbatch runs (folders
compiled earlier included); the code lives in nsysgen.analyze.dask_cluster."""

from __future__ import annotations

import sys

from nsysgen.analyze.dask_cluster import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
