"""The variables a policy's expressions may read, with their types.

`pod` and `node` have the types Kubernetes gives the v1 Pod and Node in CEL (from the
OpenAPI description of the pinned release), so a misspelt field is refused when a policy
loads. `nodeInfo` and `podRequests` are policyext's own; `variables` is an object whose
fields are the policy's variables, each typed from its expression.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from policyext import cel
from policyext.cel import Type

QUANTITIES: Final = cel.map_type(cel.STRING, cel.QUANTITY)
POD_SUMMARY: Final = cel.object_type(
    "PodSummary",
    lambda: {
        "namespace": cel.STRING,
        "name": cel.STRING,
        "labels": cel.map_type(cel.STRING, cel.STRING),
    },
)
NODE_INFO: Final = cel.object_type(
    "NodeInfo",
    lambda: {
        "allocatable": QUANTITIES,
        "requested": QUANTITIES,
        "free": QUANTITIES,
        "podCount": cel.INT,
        "pods": cel.list_type(POD_SUMMARY),
    },
)

# what a match condition may read: the pod alone (it decides whether the policy applies)
MATCH_VARIABLES: Final[Mapping[str, Type]] = {
    "pod": cel.kubernetes_type("pod"),
    "now": cel.TIMESTAMP,
}
# what every other expression may read (with `variables`, see `rule_variables`)
RULE_VARIABLES: Final[Mapping[str, Type]] = {
    "pod": cel.kubernetes_type("pod"),
    "node": cel.kubernetes_type("node"),
    "nodeInfo": NODE_INFO,
    "podRequests": QUANTITIES,
    "now": cel.TIMESTAMP,
}


def rule_variables(defined: Mapping[str, Type], others: Iterable[str]) -> dict[str, Type]:
    """The environment of a rule: `variables` holds the variables defined before it, with
    their types, and the policy's other variables as dyn (the policy reports reading those
    with a message of its own)."""
    fields = dict.fromkeys(others, cel.DYN)
    fields.update(defined)
    variables = cel.object_type("variables", lambda: fields)
    return {**RULE_VARIABLES, "variables": variables}
