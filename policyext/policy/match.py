"""Which policies apply to a pod: namespaces, label selector, scheduler name, conditions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyext.cel import COST, DEFAULT_LIMITS, CELError, Timestamp, new_frame
from policyext.policy.compile import CompiledPolicy
from policyext.policy.model import LabelSelector
from policyext.policy.resources import MAPS

DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True, slots=True)
class PolicyMatch:
    """Whether a policy applies to the pod, and why (or why not)."""

    policy: str
    applies: bool
    reason: str
    error: str | None = None


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; an empty selector matches every pod."""
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        if req.operator == "In":
            if not present or labels[req.key] not in req.values:
                return False
        elif req.operator == "NotIn":
            if present and labels[req.key] in req.values:
                return False
        elif req.operator == "Exists":
            if not present:
                return False
        elif present:  # DoesNotExist
            return False
    return True


def policy_applies(policy: CompiledPolicy, pod: Mapping[str, Any], now: Timestamp) -> PolicyMatch:
    name = policy.name
    match = policy.policy.match
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, MAPS) else {}
    spec = pod.get("spec")
    spec = spec if isinstance(spec, MAPS) else {}
    namespace = str(meta.get("namespace") or "default")
    if match.namespaces is not None and namespace not in match.namespaces:
        return PolicyMatch(name, False, f"namespace {namespace!r} is not in namespaces")
    if namespace in match.exclude_namespaces:
        return PolicyMatch(name, False, f"namespace {namespace!r} is excluded")
    if match.pod_selector is not None:
        labels = meta.get("labels")
        if not selector_matches(match.pod_selector, labels if isinstance(labels, MAPS) else {}):
            return PolicyMatch(name, False, "the pod's labels do not match podSelector")
    if match.scheduler_names is not None:
        scheduler = str(spec.get("schedulerName") or DEFAULT_SCHEDULER)
        if scheduler not in match.scheduler_names:
            return PolicyMatch(name, False, f"schedulerName {scheduler!r} is not matched")
    if policy.conditions:
        return _conditions(policy, pod, now)
    return PolicyMatch(name, True, "matches")


def _conditions(policy: CompiledPolicy, pod: Mapping[str, Any], now: Timestamp) -> PolicyMatch:
    """The match conditions, as in ValidatingAdmissionPolicy: all are evaluated; one that
    is false means the policy does not apply, even if another failed; otherwise a failure
    (an error, or a value that is not a bool) is decided by the policy's failurePolicy."""
    frame = new_frame({"pod": pod, "now": now}, DEFAULT_LIMITS.cost_budget)
    failed: tuple[str, str] | None = None  # the first failure: (condition, error)
    for condition, program in policy.conditions:
        frame[COST][0] = 0  # type: ignore[index]  # each condition has a budget of its own
        try:
            value = program.run(frame)
        except CELError as e:
            failed = failed or (condition.name, e.message)
            continue
        if value is False:
            return PolicyMatch(policy.name, False, f"condition {condition.name!r} is false")
        if value is not True:
            failed = failed or (condition.name, "the condition is not a bool")
    if failed is not None:
        return _condition_error(policy, *failed)
    return PolicyMatch(policy.name, True, "matches")


def _condition_error(policy: CompiledPolicy, condition: str, message: str) -> PolicyMatch:
    """A match condition that failed, none being false: the policy applies when it fails
    closed (Fail)."""
    applies = policy.policy.failure_policy == "Fail"
    outcome = "applies (failurePolicy Fail)" if applies else "skipped (failurePolicy Ignore)"
    return PolicyMatch(
        policy.name,
        applies,
        f"condition {condition!r} failed to evaluate: {outcome}",
        error=message,
    )
