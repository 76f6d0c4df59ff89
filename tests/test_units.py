"""The shared number formatting (syncdoctor.units): table-driven, pure."""

from __future__ import annotations

import math

import pytest

from syncdoctor.units import (
    format_byte_rate,
    format_bytes,
    format_count,
    format_duration,
    format_link_rate,
    format_ranks,
    format_seconds,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(100, "100B"), (512, "512B"), (1024, "1K"), (1536, "1.5K"), (16 << 20, "16M"), (1 << 30, "1G"),
     (1 << 40, "1T"), (math.nan, "?")],
)
def test_format_bytes(value: float, text: str) -> None:
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("bytes_per_s", "text"),
    [(5e6, "40 Mb/s"), (1.25e9, "10 Gb/s"), (12, "96 b/s"), (312.5e6, "2.5 Gb/s"), (math.inf, "?")],
)
def test_link_rates_are_in_bits(bytes_per_s: float, text: str) -> None:
    assert format_link_rate(bytes_per_s) == text


@pytest.mark.parametrize(("bytes_per_s", "text"), [(540e6, "540 MB/s"), (2.1e9, "2.1 GB/s"), (5e5, "0.5 MB/s")])
def test_byte_rates_are_in_bytes(bytes_per_s: float, text: str) -> None:
    assert format_byte_rate(bytes_per_s) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (12e-6, "12 us"), (3.4e-3, "3.4 ms"), (1.25, "1.25 s"), (750, "12.5 min"), (-2, "-2 s"),
     (math.nan, "?")],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(4.096e-6 * 2, "8.2 µs"), (0.2684, "268.4 ms"), (4.29, "4.3 s"), (150, "2.5 min"), (4320, "1.2 h")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_format_count_and_ranks() -> None:
    assert format_count(12345) == "12,345"
    assert format_ranks([7, 0, 1, 2, 3, 3]) == "0-3,7"
    assert format_ranks(range(4096)) == "0-4095"
    assert format_ranks([]) == ""


def test_format_ranks_is_the_one_rank_list_of_watch_and_analyze() -> None:
    from syncdoctor.analyze.rules.common import fmt_ranks
    from syncdoctor.watch.records import format_ranks as watch_format_ranks
    from syncdoctor.watch.records import parse_ranks

    assert watch_format_ranks is format_ranks
    assert format_ranks([0, 1, 2, 5], sep=", ") == fmt_ranks([5, 2, 1, 0]) == "0-2, 5"
    assert fmt_ranks([]) == "none"
    for ranks in ([0, 1, 2, 3, 7, 9, 10], [5], list(range(0, 100, 3))):
        assert parse_ranks(format_ranks(ranks)) == tuple(ranks)
