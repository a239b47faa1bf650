"""Reports to answers: export, map each report to its reduced rows (serially or on Dask),
reduce across ranks (NCCL by size, steps, stragglers), summary, plots, regressions. Imports
nothing of the compile side."""
