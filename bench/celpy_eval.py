"""The CEL micro-benchmark: one rule evaluated for one (pod, node), in microseconds.

Measured for each rule of `bench.policy`:
- celpy (the `cel-python` package, its tree-walking interpreter), on the rule's portable
  form; celpy 0.5 parses neither optional fields nor Kubernetes quantities;
- policyext's engine, when `policyext.cel.compile` exists, on the same portable form (the
  like-for-like comparison) and on the form a policy author writes.

Inputs are converted to each engine's values before timing (celpy wants its own types; ours
takes the decoded JSON as it is). celpy takes milliseconds per evaluation, so it is timed
on a sample of the nodes. Every result is checked against `bench.policy.expected_value`.
"""

from __future__ import annotations

import importlib
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, cast

from bench import policy
from bench.workload import NOW, Json, Workload, snapshot

# Declared as dyn: the benchmark measures evaluation, not the checker's type inference.
NO_PORTABLE_FORM = "needs Kubernetes quantities, which celpy does not have"
VARIABLES = {"pod": "dyn", "node": "dyn", "nodeInfo": "dyn", "podRequests": "dyn", "now": "dyn"}


@dataclass(frozen=True)
class Timing:
    """Median microseconds per evaluation over the nodes, or why there is none."""

    median_us: float | None
    nodes: int = 0
    mismatches: int = 0  # results that differ from the reference
    note: str = ""


@dataclass(frozen=True)
class RuleTimings:
    rule: str
    kind: str
    celpy: Timing
    ours_portable: Timing
    ours_policy: Timing

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class _Program(Protocol):
    def evaluate(self, activation: Mapping[str, object]) -> object: ...


def _time_over_nodes(
    run: Callable[[object], object],
    activations: Sequence[object],
    expected: Sequence[bool | float],
    repeats: int,
) -> Timing:
    per_node: list[float] = []
    mismatches = 0
    for activation, want in zip(activations, expected, strict=True):
        got = run(activation)  # untimed: the first call may warm caches
        if not _same(got, want):
            mismatches += 1
        start = time.perf_counter_ns()
        for _ in range(repeats):
            run(activation)
        per_node.append((time.perf_counter_ns() - start) / repeats / 1000)
    return Timing(statistics.median(per_node), len(per_node), mismatches)


def _same(got: object, want: bool | float) -> bool:
    if isinstance(want, bool):
        return _is_boolish(got) and bool(got) is want
    try:
        return math.isclose(float(cast(float, got)), want, rel_tol=1e-9)
    except (TypeError, ValueError):
        return False


def _is_boolish(value: object) -> bool:
    # celpy's BoolType subclasses int; ours returns bool; an int 1 is not a filter verdict
    return type(value) is bool or type(value).__name__ == "BoolType"


def _sample(nodes: list[Json], count: int) -> list[Json]:
    """`count` nodes spread evenly over the list (deterministic)."""
    if count >= len(nodes):
        return nodes
    step = len(nodes) / count
    return [nodes[int(i * step)] for i in range(count)]


def _expected(rule: policy.Rule, workload: Workload, nodes: list[Json]) -> list[bool | float]:
    reference = policy.Reference(workload.nodes, workload.pods)
    pod = policy.PodFacts.of(workload.pod)
    return [policy.expected_value(rule, pod, reference.node(n)) for n in nodes]


# --- celpy -----------------------------------------------------------------------------


def time_celpy(rule: policy.Rule, workload: Workload, nodes: list[Json], repeats: int) -> Timing:
    if rule.portable is None:
        return Timing(None, note=NO_PORTABLE_FORM)
    try:
        import celpy
        from celpy.adapter import json_to_cel
    except ImportError:
        return Timing(None, note="celpy is not installed (pip install cel-python)")
    env = celpy.Environment()
    program = env.program(env.compile(rule.portable))
    pod = json_to_cel(workload.pod)
    activations = [{"pod": pod, "node": json_to_cel(n)} for n in nodes]
    expected = _expected(rule, workload, nodes)

    def run(activation: object) -> object:
        result: object = program.evaluate(cast(Any, activation))
        return result

    return _time_over_nodes(run, activations, expected, repeats)


# --- policyext -------------------------------------------------------------------------


def our_compile() -> Callable[..., _Program] | None:
    """`policyext.cel.compile`, or None while the engine does not provide it."""
    try:
        module = importlib.import_module("policyext.cel")
    except ImportError:
        return None
    compile_fn = getattr(module, "compile", None)
    return cast(Callable[..., _Program], compile_fn) if callable(compile_fn) else None


def our_activations(workload: Workload, nodes: list[Json]) -> list[dict[str, object]]:
    """The variables a policyext policy sees, for each node (built once, not timed): the
    engine's own podRequests and nodeInfo (from the snapshot's nodes and pods)."""
    from policyext.cel import Timestamp
    from policyext.cluster.snapshot import SnapshotSource
    from policyext.policy import pod_requests

    source = SnapshotSource(snapshot(workload)["items"])
    requests = pod_requests(workload.pod)
    now = Timestamp(int(NOW.timestamp()) * 1_000_000_000)
    return [
        {
            "pod": workload.pod,
            "node": n,
            "nodeInfo": source.node_info(source.nodes[n["metadata"]["name"]]),
            "podRequests": requests,
            "now": now,
        }
        for n in nodes
    ]


def time_ours(
    source: str | None,
    rule: policy.Rule,
    workload: Workload,
    nodes: list[Json],
    activations: list[dict[str, object]],
    repeats: int,
) -> Timing:
    if source is None:
        return Timing(None, note=NO_PORTABLE_FORM)
    compile_fn = our_compile()
    if compile_fn is None:
        return Timing(None, note="policyext.cel.compile is not available yet")
    try:
        program = compile_fn(source, VARIABLES)
    except Exception as e:  # any compile failure means n/a, with the reason
        return Timing(None, note=f"does not compile: {e}")
    expected = _expected(rule, workload, nodes)

    def run(activation: object) -> object:
        return program.evaluate(cast(Mapping[str, object], activation))

    try:
        return _time_over_nodes(run, activations, expected, repeats)
    except Exception as e:
        return Timing(None, note=f"evaluation failed: {e}")


def run_cel_benchmarks(
    workload: Workload, *, celpy_nodes: int = 40, celpy_repeats: int = 2, our_repeats: int = 20
) -> list[RuleTimings]:
    """Time every benchmark rule with both engines over the workload's nodes."""
    sample = _sample(workload.nodes, celpy_nodes)
    ours_available = our_compile() is not None
    activations = our_activations(workload, workload.nodes) if ours_available else []
    rows = []
    for rule in policy.RULES:
        rows.append(
            RuleTimings(
                rule=rule.name,
                kind=rule.kind,
                celpy=time_celpy(rule, workload, sample, celpy_repeats),
                ours_portable=time_ours(
                    rule.portable, rule, workload, workload.nodes, activations, our_repeats
                ),
                ours_policy=time_ours(
                    rule.expression, rule, workload, workload.nodes, activations, our_repeats
                ),
            )
        )
    return rows
