"""The modules `make mutation` mutates, and the tests each one runs against its mutants.

The one list to edit when a module moves or a test file is added: each target names a
source file (from the repository's root), the test files that cover it (a selection, so
that a target takes minutes rather than the whole suite per mutant), and optionally the
definitions to mutate (functions or classes by qualified name, when only part of a large
module decides what kube-scheduler is told) or the operators to apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    tests: tuple[str, ...]
    # only mutations inside these definitions (qualified names: `Class`, `Class.method`,
    # `function`, or a name the module assigns: `TABLE`); empty: the whole module
    within: tuple[str, ...] = ()
    # only the operators whose cosmic-ray names match this regular expression (e.g. the
    # comparison operators alone); empty: every operator the run applies
    operators: str = ""


# the comparison operators of Python (==, <, is, ...) and the boolean ones (and, or, not)
COMPARISONS: Final = r"core/(ReplaceComparisonOperator_|ReplaceAndWithOr|ReplaceOrWithAnd|AddNot)"

TARGETS: Final = (
    Target(
        "rejection",
        "policyext/policy/rejection.py",
        ("tests/policy/test_verdicts.py", "tests/server/test_mixed_rejections.py"),
    ),
    Target(
        "statuses",
        "policyext/server/statuses.py",
        (
            "tests/server/test_statuses.py",
            "tests/server/test_bad_input.py",
            "tests/server/test_path_tricks.py",
            "tests/server/test_hotpath.py",
            "tests/server/test_entrance.py",
            "tests/server/test_framing.py",
            "tests/server/test_slow_clients.py",
            "tests/server/test_connection_limits.py",
            "tests/server/test_malformed_http.py",
            "tests/server/test_listeners.py",
            "tests/server/test_tls_allow.py",
            # /readyz's 503 (the only test of it: the workers draining on SIGTERM)
            "tests/server/test_shutdown.py::test_on_sigterm_readyz_answers_503_in_every_worker_saying_it_drains",
        ),
    ),
    Target(
        "store",
        "policyext/store.py",
        (
            "tests/server/test_reload.py",
            "tests/cluster/test_policy_sources.py",
            "tests/cluster/test_rules_crd.py",
        ),
    ),
    Target(
        "policy_sources",
        "policyext/cluster/policy_sources.py",
        (
            "tests/cluster/test_policy_sources.py",
            "tests/cluster/test_rules_crd.py",
            "tests/server/test_reload.py",
        ),
    ),
    Target(
        "normalise",
        "policyext/policy/engine.py",
        ("tests/policy/test_engine.py", "tests/server/test_wire_format.py"),
        within=("_normalize", "_score"),
    ),
    Target(
        "verdicts",
        "policyext/policy/verdicts.py",
        (
            "tests/policy/test_verdicts.py",
            "tests/policy/test_engine.py",
            "tests/server/test_mixed_rejections.py",
            "tests/server/test_wire_format.py",
            "tests/server/test_failed_node_messages.py",
            # the counts per rule of the decision log and the metrics (Evaluation.tally)
            "tests/server/test_decision_counts.py",
        ),
    ),
    Target(
        "fastwire",
        "policyext/server/fastwire.py",
        (
            "tests/server/test_wire_format.py",
            "tests/server/test_node_list_versions.py",
            "tests/server/test_reply_encoding.py",
        ),
    ),
    Target(
        "wire",
        "policyext/server/wire.py",
        (
            "tests/server/test_wire_args.py",
            # the bodies large enough for the fast decoder, whose Nodes a reply copies
            "tests/server/test_node_list_versions.py",
            "tests/server/test_wire_format.py",
            "tests/server/test_reply_encoding.py",
            "tests/server/test_bad_input.py",
            "tests/server/test_names_apart.py",
            "tests/server/test_repeated_names.py",
        ),
    ),
    Target(
        "verbs",
        "policyext/server/verbs.py",
        (
            "tests/server/test_wire_format.py",
            "tests/server/test_reply_encoding.py",
            "tests/server/test_hotpath.py",
            "tests/server/test_preemption.py",
            "tests/server/test_bind_verb.py",
            "tests/server/test_scores_ahead.py",
            "tests/server/test_repeated_names.py",
            "tests/server/test_node_sources.py",
            "tests/server/test_node_list_versions.py",
            "tests/server/test_memo.py",
            "tests/server/test_decision_counts.py",
            "tests/server/test_engine_agreement.py",
        ),
    ),
    Target(
        "columns-compare",
        "policyext/policy/columns/operators.py",
        ("tests/policy/test_columns.py", "tests/policy/test_invalid_quantities.py"),
        within=("Compare",),
        operators=COMPARISONS,
    ),
    Target(
        "columns-quantities",
        "policyext/policy/columns/quantities.py",
        ("tests/policy/test_columns.py", "tests/policy/test_invalid_quantities.py"),
        within=(
            "QuantityCompare",
            "_order_test",
            "clear_sides",
            "_sides",
            "admitted",
            "_scalable",
        ),
        operators=COMPARISONS,
    ),
)
