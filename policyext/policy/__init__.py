"""The policy engine: policy files read, validated and compiled into a `PolicySet`, and a
pod judged against the nodes of a node source.

    policies = load_policy_set(["rules/"])  # raises PolicyError with every Issue
    evaluation = evaluate(policies, pod, nodes, source, now)  # prepare(...), then .evaluate

This module is the engine's whole public face: callers outside policy/ (the server, the
cluster adapters, the store, the offline tools, the commands) import from here, never from
its modules (an import-linter contract keeps them to it). What each module is for:
docs/architecture.md.
"""

from policyext.policy.compile import (
    NOT_LOADED,
    PolicySet,
    load_policies,
    load_policy_set,
    load_policy_texts,
)
from policyext.policy.engine import (
    Evaluation,
    NodeVerdict,
    Prepared,
    RuleScore,
    evaluate,
    prepare,
)
from policyext.policy.environment import rule_variables
from policyext.policy.explain import evaluation_to_dict, score_to_dict, verdict_to_dict
from policyext.policy.lists import open_lists
from policyext.policy.loader import (
    POLICY_SUFFIXES,
    Document,
    RefusedYAML,
    discover,
    discover_files,
    load_yaml_all,
    read_documents,
    yaml_error_line,
)
from policyext.policy.model import TEST_KIND, Issue, Location, PolicyError
from policyext.policy.node_source import LiveNodeSource, NodeSource
from policyext.policy.objects import TEXT_PREFIX, authored_text, field_path, field_problem
from policyext.policy.resources import (
    CORE_RESOURCES,
    MAPS,
    ZERO,
    InvalidQuantity,
    NodeInfo,
    Resources,
    add_into,
    build_node_info,
    node_allocatable,
    node_info_of,
    pod_is_active,
    pod_requests,
    pod_summary,
    subtract_from,
    without_pods,
)
from policyext.policy.rows import NodeRecord, NodeRows, NodeTable
from policyext.policy.schema import validate as validate_schema
from policyext.policy.verdicts import Refused

__all__ = [
    "CORE_RESOURCES",
    "MAPS",
    "NOT_LOADED",
    "POLICY_SUFFIXES",
    "TEST_KIND",
    "TEXT_PREFIX",
    "ZERO",
    "Document",
    "Evaluation",
    "InvalidQuantity",
    "Issue",
    "LiveNodeSource",
    "Location",
    "NodeInfo",
    "NodeRecord",
    "NodeRows",
    "NodeSource",
    "NodeTable",
    "NodeVerdict",
    "PolicyError",
    "PolicySet",
    "Prepared",
    "Refused",
    "RefusedYAML",
    "Resources",
    "RuleScore",
    "add_into",
    "authored_text",
    "build_node_info",
    "discover",
    "discover_files",
    "evaluate",
    "evaluation_to_dict",
    "field_path",
    "field_problem",
    "load_policies",
    "load_policy_set",
    "load_policy_texts",
    "load_yaml_all",
    "node_allocatable",
    "node_info_of",
    "open_lists",
    "pod_is_active",
    "pod_requests",
    "pod_summary",
    "prepare",
    "read_documents",
    "rule_variables",
    "score_to_dict",
    "subtract_from",
    "validate_schema",
    "verdict_to_dict",
    "without_pods",
    "yaml_error_line",
]
