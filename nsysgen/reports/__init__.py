"""The report-side facts, written once: the run contract (nsysgen-expect.json), the SQLite
export of a report, and which run of a report folder is read.

Standard library only, and importing nothing of nsysgen but this package: `nsysgen analyze`
imports these modules, and the shipped verifier (nsysgen-verify.py, which runs where nsysgen is
not installed) is assembled from them and nsysgen/shipped/verify/ (nsysgen/shipped/assemble.py).
"""
