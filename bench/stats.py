"""Summaries of latency samples."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Latencies of one series, in milliseconds."""

    count: int
    p50: float
    p90: float
    p99: float
    mean: float
    min: float
    max: float


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest sample with at least `fraction` of the
    samples at or below it (with 200 samples, p99 is the second largest)."""
    if not sorted_values:
        raise ValueError("no samples")
    rank = max(math.ceil(fraction * len(sorted_values)), 1)
    return sorted_values[rank - 1]


def summarize_ns(samples_ns: Sequence[int]) -> Summary:
    values = sorted(s / 1e6 for s in samples_ns)
    return Summary(
        count=len(values),
        p50=statistics.median(values),
        p90=percentile(values, 0.90),
        p99=percentile(values, 0.99),
        mean=statistics.fmean(values),
        min=values[0],
        max=values[-1],
    )
