"""What a filter says of a node it rejects: shared by the compiled rules, which know their
fixed rejection in advance, and the verdicts, which collect them."""

from __future__ import annotations

from typing import NamedTuple


class Rejection(NamedTuple):
    """A filter that rejected a node (or, in Audit mode, would have)."""

    policy: str
    rule: str
    message: str
    audit: bool = False
    unresolvable: bool = False
    error: str | None = None  # set when the rule failed to evaluate

    @property
    def rule_id(self) -> str:
        return f"{self.policy}/{self.rule}"
