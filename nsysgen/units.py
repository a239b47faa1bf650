"""Quantities as a person reads them: the durations and sizes that plan, the lints and the
generated files print. Here, below every layer, so that a target formats what the plan carries
without reaching into the modules that estimate it."""

from __future__ import annotations


def human_seconds(seconds: float) -> str:
    """A duration as a person reads it: fixed notation in a unit that fits (0.28 s, 56.4 s,
    12.5 min, 3.2 h, 51.7 days), never `4.46556e+06 s`. Every estimated duration that plan,
    the lints and the generated files print goes through here."""
    if round(seconds) < 120:  # judged as printed: 119.6 s would read 120 s
        # Up to 3 significant digits (a fit's estimate holds no more), trailing zeros dropped.
        digits = 3 - len(str(int(seconds))) if seconds >= 1 else 3
        text = f"{seconds:.{max(digits, 0)}f}"
        return f"{text.rstrip('0').rstrip('.') if '.' in text else text} s"
    for unit, size, below in (("min", 60, 120), ("h", 3600, 48), ("days", 86400, None)):
        value = seconds / size
        # Judged as printed: 7199 s is 120.0 min, so it reads 2.0 h.
        if below is None or round(value, 1) < below:
            return f"{value:.1f} {unit}"
    raise AssertionError


def rounded_seconds(seconds: float) -> str:
    """A duration in whole seconds, minutes or tenths of hours (the analysis job's estimate)."""
    # Each unit judged as printed: 7199 s is 120 min, so it reads 2.0 h.
    if round(seconds) < 120:
        return f"{seconds:.0f} s"
    if round(seconds / 60) < 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def human_bytes(size: float) -> str:
    """A byte count in decimal units, as plan and the generated files print it."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError
