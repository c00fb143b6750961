"""The SchedulingPolicy and PolicyTest documents as validated, immutable data.

Field names follow the YAML (`policy-format.md`); every element keeps where it was written so
that an error found later (a CEL type error, a duplicate name) can point at it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

API_VERSION = "policyext.io/v1alpha1"
POLICY_KIND = "SchedulingPolicy"
TEST_KIND = "PolicyTest"

FailurePolicy = Literal["Fail", "Ignore"]
Mode = Literal["Enforce", "Audit"]
Normalize = Literal["Clamp", "MinMax"]


@dataclass(frozen=True, slots=True)
class Location:
    """Where something was written: a file and a 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class Issue:
    """One authoring error: where, in which policy and rule, and what is wrong."""

    location: Location
    message: str
    policy: str = ""
    rule: str = ""

    def __str__(self) -> str:
        return self._line("")

    def as_warning(self) -> str:
        """The line of a warning: `file:line:col: warning: policy/rule: message`."""
        return self._line("warning: ")

    def _line(self, severity: str) -> str:
        owner = "/".join(part for part in (self.policy, self.rule) if part)
        return f"{self.location}: {severity}{owner + ': ' if owner else ''}{self.message}"


class PolicyError(Exception):
    """A set of policy files that cannot be served; `issues` lists every problem found."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__("\n".join(str(i) for i in issues))
        self.issues = issues


@dataclass(frozen=True, slots=True)
class Expression:
    """A CEL expression as written, and where its text starts in the file."""

    source: str
    location: Location
    # how expression-relative positions map to the file: the scalar style of the YAML value
    # and, for block scalars, the indentation of its lines
    style: str = ""
    indent: int = 0


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class MatchCondition:
    name: str
    expression: Expression


@dataclass(frozen=True, slots=True)
class Match:
    namespaces: frozenset[str] | None = None
    exclude_namespaces: frozenset[str] = frozenset()
    pod_selector: LabelSelector | None = None
    scheduler_names: frozenset[str] | None = None
    conditions: tuple[MatchCondition, ...] = ()


@dataclass(frozen=True, slots=True)
class Variable:
    name: str
    expression: Expression
    location: Location


@dataclass(frozen=True, slots=True)
class Filter:
    name: str
    expression: Expression
    location: Location
    message: str | None = None
    message_expression: Expression | None = None
    failure_policy: FailurePolicy = "Fail"
    mode: Mode = "Enforce"
    unresolvable: bool = False


@dataclass(frozen=True, slots=True)
class Score:
    name: str
    expression: Expression
    location: Location
    weight: int = 1
    normalize: Normalize = "Clamp"
    mode: Mode = "Enforce"


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    name: str
    location: Location
    failure_policy: FailurePolicy = "Fail"
    match: Match = field(default_factory=Match)
    variables: tuple[Variable, ...] = ()
    filters: tuple[Filter, ...] = ()
    scores: tuple[Score, ...] = ()
