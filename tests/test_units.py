"""The durations and sizes that plan, the lints and the generated files print
(nsysgen/units.py): fixed notation in a unit that fits, at each boundary between units."""

from __future__ import annotations

import pytest

from nsysgen.units import human_bytes, human_seconds, rounded_seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0 s"),
        (0.28, "0.28 s"),
        (1.0, "1 s"),
        (5.25, "5.25 s"),
        (56.44, "56.4 s"),
        (119.4, "119 s"),
        (120, "2.0 min"),
        (750, "12.5 min"),
        (11_520, "3.2 h"),
        (7_199, "2.0 h"),  # 119.98 min would print as 120.0 min
        (119.6, "2.0 min"),  # 119.6 s would print as 120 s
        (172_799, "2.0 days"),
        (4_465_560, "51.7 days"),
    ],
)
def test_human_seconds_picks_the_unit_and_at_most_three_digits(seconds: float, text: str) -> None:
    assert human_seconds(seconds) == text


def test_human_seconds_never_prints_scientific_notation() -> None:
    for exponent in range(-3, 10):
        assert "e" not in human_seconds(10.0**exponent).split()[0]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "0 s"),
        (119, "119 s"),
        (119.6, "2 min"),
        (120, "2 min"),
        (7_199, "2.0 h"),
        (7_200, "2.0 h"),
    ],
)
def test_rounded_seconds_is_whole_seconds_minutes_or_tenths_of_hours(
    seconds: float, text: str
) -> None:
    assert rounded_seconds(seconds) == text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 KB"),
        (1_234_567, "1.2 MB"),
        (5e12, "5.0 TB"),
        (7.5e15, "7500.0 TB"),  # no unit above TB
    ],
)
def test_human_bytes_is_decimal_and_stops_at_terabytes(size: float, text: str) -> None:
    assert human_bytes(size) == text
