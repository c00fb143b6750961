"""The bounds on what an expression may be and do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds on what an expression may be and do."""

    max_source_length: int = 10_000
    max_nesting_depth: int = 50
    # Kubernetes has no limit of its own on loops nested in loops (the cost budget bounds
    # what they do): by default they may nest as deep as expressions do
    max_comprehension_nesting: int = 50
    cost_budget: int = 1_000_000
