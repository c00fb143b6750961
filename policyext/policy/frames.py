"""The state of one engine call: the frames CEL evaluates in, built only when needed.

A request has one pod-side frame (pod, podRequests, now) per policy, in which pod-only
rules, pod-only variables and the pod-side parts of split rules are evaluated once. A node
gets its own frame (adding node, nodeInfo and its variables) only when some rule has to
be evaluated for it: with cached plans, most nodes of a request never need one.

Nothing here is part of a reference cycle, so the pod and the nodes are freed by reference
counting as soon as a call is over (a body can be tens of megabytes; waiting for the cycle
collector lets a worker grow by that much per request). A frame refers to its `variables`,
which never refer back to it: they evaluate in a frame of their own, made per variable.
Errors kept as values lose their tracebacks (a traceback refers to the frames it passed
through, and so to the pod and the node), and a kept error is raised as a fresh copy.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policyext.cel import COST, CELError, CELEvalError, Program, Timestamp
from policyext.policy.compile import CompiledExpression, CompiledPolicy
from policyext.policy.node_source import NodeSource
from policyext.policy.plan import Plan
from policyext.policy.resources import InvalidQuantity, NodeInfo, node_info_of, pod_requests

Json = Mapping[str, Any]
MISS: Final = object()


class Failure:
    """An evaluation error kept as a value (errors are values in CEL)."""

    __slots__ = ("error",)

    def __init__(self, error: CELError) -> None:
        self.error = detached(error)


def detached(error: CELError) -> CELError:
    """The error without its traceback and chained errors, to be kept as a value: they
    refer to the frames the error passed through, and so to the pod and the node."""
    error.__traceback__ = None
    error.__context__ = None
    error.__cause__ = None
    return error


class DeadlineExceeded(CELEvalError):
    """The request's time is up: what was not evaluated yet fails with this error (each
    rule's failurePolicy decides), so the scheduler gets an answer before its timeout."""


@dataclass(slots=True)
class Counters:
    budget: int
    evaluations: int = 0
    errors: int = 0
    # time.perf_counter() value past which nothing more is evaluated; None: no limit
    deadline: float | None = None
    timed_out: bool = False

    # The deadline is checked before every evaluation (one clock read, tens of ns): a
    # single evaluation is bounded by its cost budget, so that bounds the overshoot.

    def _expired(self) -> DeadlineExceeded:
        self.timed_out = True
        return DeadlineExceeded(
            "policyext ran out of time for this request (--request-deadline); "
            "this rule was not evaluated"
        )

    def attempt(self, program: Program, frame: dict[Any, Any]) -> object:
        """The value, or the error as a Failure value."""
        deadline = self.deadline
        if deadline is not None and time.perf_counter() > deadline:
            return Failure(self._expired())
        try:
            frame[COST][0] = 0
            self.evaluations += 1
            return program.run(frame)
        except CELError as e:
            return Failure(e)

    def run_variable(self, program: Program, frame: dict[Any, Any]) -> object:
        """Evaluate a variable in a frame of its own; the frame's cost meter is set here,
        so that its cost is not charged to the rule that happens to read it first."""
        deadline = self.deadline
        if deadline is not None and time.perf_counter() > deadline:
            raise self._expired()
        frame[COST] = [0, self.budget]
        self.evaluations += 1
        return program.run(frame)


class _Unreadable(dict[Any, Any]):
    """A frame without `podRequests`, for a pod whose requests are invalid: reading it is
    an evaluation error that says why (each rule's failurePolicy decides), never a silent
    zero. Only such pods get this (slower) dict subclass."""

    __slots__ = ("error",)

    def __init__(self, error: str, frame: Mapping[Any, Any]) -> None:
        super().__init__(frame)
        self.error = error

    def __missing__(self, key: object) -> object:
        if key == "podRequests":
            raise CELEvalError(self.error)
        raise KeyError(key)


def copied(frame: dict[Any, Any]) -> dict[Any, Any]:
    """A copy of a frame, of the same kind."""
    if type(frame) is dict:
        return dict(frame)
    assert isinstance(frame, _Unreadable)
    return _Unreadable(frame.error, frame)


class Variables(dict[str, object]):
    """`variables` of one policy for one (pod, node): evaluated on first use, at most once
    (a failure too); variables that read only the pod come from the request-wide set.

    `inputs` are what a variable may read besides the other variables (pod, node...): a
    dict that never holds this object, so that no cycle forms; each variable is evaluated
    in a copy of it that adds `variables`."""

    __slots__ = ("_compiled", "_counters", "_failures", "_inputs", "_shared")
    cel_type_name = "map"

    def __init__(
        self,
        compiled: Mapping[str, CompiledExpression],
        inputs: dict[Any, Any],
        shared: Variables | None,
        counters: Counters,
    ) -> None:
        super().__init__()
        self._compiled = compiled
        self._inputs = inputs
        self._shared = shared
        self._counters = counters
        self._failures: dict[str, CELError] = {}

    def __missing__(self, name: str) -> object:
        failure = self._failures.get(name)
        if failure is not None:
            raise copy.copy(failure)  # the kept one stays without a traceback
        expr = self._compiled.get(name)
        if expr is None:
            raise KeyError(name)
        try:
            if expr.pod_only and self._shared is not None:
                value = self._shared[name]
            else:
                frame = copied(self._inputs)
                frame["variables"] = self
                value = self._counters.run_variable(expr.program, frame)
        except CELError as e:
            self._failures[name] = detached(copy.copy(e))
            raise
        self[name] = value
        return value


class Request:
    """What one engine call shares across its nodes."""

    def __init__(
        self,
        applied: list[CompiledPolicy],
        pod: Json,
        now: Timestamp,
        source: NodeSource | None,
        counters: Counters,
    ) -> None:
        self.counters = counters
        self.source = source
        self.base: dict[Any, Any] = {
            "pod": pod,
            "now": now,
            "podRequests": {},
            "node": None,
            "nodeInfo": None,
            "variables": None,
            COST: [0, counters.budget],
        }
        if applied:
            try:
                self.base["podRequests"] = pod_requests(pod)
            except InvalidQuantity as e:  # the rules that read podRequests fail for this pod
                del self.base["podRequests"]
                self.base = _Unreadable(f"podRequests cannot be read: {e}", self.base)
        self.declared = {p.name: {v.name: c for v, c in p.variables} for p in applied}
        # per policy: its request-wide variables, and the frame of its pod-side evaluations
        self.shared: dict[str, Variables] = {}
        self.frames: dict[str, dict[Any, Any]] = {}
        for p in applied:
            variables = Variables(self.declared[p.name], self.base, None, counters)
            frame = copied(self.base)
            frame[COST] = [0, counters.budget]
            frame["variables"] = variables
            self.shared[p.name] = variables
            self.frames[p.name] = frame
        self.pod_values: dict[int, object] = {}  # id(expression) -> value or Failure
        self.params: dict[int, object] = {}  # id(plan) -> part values (errors as values)

    def pod_value(self, policy: str, expr: CompiledExpression) -> object:
        """A pod-only expression, once per request."""
        value = self.pod_values.get(id(expr), MISS)
        if value is MISS:
            frame = self.frames[policy]
            value = self.pod_values[id(expr)] = self.counters.attempt(expr.program, frame)
        return value

    def plan_params(self, policy: str, plan: Plan) -> object:
        """The values of a plan's pod-side parts, once per request. A part that fails has
        its error as its value: the residual raises it where it reads that part, so the
        result is the whole expression's (`false && <error>` is still false), and the
        per-node results stay cacheable for pods that fail the same way."""
        params = self.params.get(id(plan), MISS)
        if params is MISS:
            frame, attempt = self.frames[policy], self.counters.attempt
            values: list[object] = []
            for part in plan.all_parts:  # (a loop: a comprehension is a call of its own)
                value = attempt(part, frame)
                values.append(value.error if type(value) is Failure else value)
            params = self.params[id(plan)] = tuple(values)
        return params


class NodeFrame:
    """One candidate node's frame, built on first use. `inputs` is the frame without
    `variables`: what the node's variables evaluate over."""

    __slots__ = ("frame", "info", "inputs", "node", "request", "variables_of")

    def __init__(self, request: Request, node: Json) -> None:
        self.request = request
        self.node = node
        self.frame: dict[Any, Any] | None = None
        self.inputs: dict[Any, Any] | None = None
        self.variables_of = ""
        self.info: NodeInfo | None = None

    def node_info(self) -> NodeInfo:
        if self.info is None:
            source = self.request.source
            if source is not None:
                self.info = source.node_info(self.node)
            else:
                self.info = node_info_of(self.node, None, None)
        return self.info

    def frame_for(self, policy: str) -> dict[Any, Any]:
        frame = self.frame
        request = self.request
        if frame is None:
            inputs = self.inputs = copied(request.base)
            inputs["node"] = self.node
            inputs["nodeInfo"] = self.node_info()
            frame = self.frame = copied(inputs)
            frame[COST] = [0, request.counters.budget]
        if self.variables_of != policy:
            assert self.inputs is not None
            frame["variables"] = Variables(
                request.declared[policy], self.inputs, request.shared[policy], request.counters
            )
            self.variables_of = policy
        return frame

    def evaluate(self, policy: str, expr: CompiledExpression, params: object) -> object:
        """The expression for this node: the plan's residual with the part values, or the
        whole expression when there is no usable plan."""
        plan = expr.plan
        frame = self.frame_for(policy)
        if plan is None or not isinstance(params, tuple):
            return self.request.counters.attempt(expr.program, frame)
        if plan.parts:  # the key parts that follow are not the residual's to read
            frame.update(zip(plan.placeholders, params[: len(plan.parts)], strict=True))
        return self.request.counters.attempt(plan.residual, frame)


def node_name(node: Json) -> str:
    try:
        return str(node["metadata"]["name"])
    except (KeyError, TypeError):
        return ""
