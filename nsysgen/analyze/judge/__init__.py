"""Judging: the reduced tables of every rank to the answers: collectives matched across ranks,
each step's critical path and who was late by how much, who waited, NCCL bandwidth against the
fabric, the regression against a baseline, and the summary that carries them. Imports read/,
never render/."""
