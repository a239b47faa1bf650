"""Reading: each report to its compact tables (the map step, on any worker): which reports make
the run and which rank each is, the export (made once, cached beside the report), and what one
report says of its steps, collectives and kernels. Imports nothing of judge/ or render/: the
cache of a report's reduction is keyed by this folder's code."""
