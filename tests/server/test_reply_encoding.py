"""The filter and prioritize replies are written from the evaluation's arrays (names joined
with fragments of encoded text, wire.host_priorities and wire.names_filter_result) rather
than through a dict per node: every byte must be what orjson writes for the plain
structure, whatever the names and messages hold (quotes, backslashes, non-ASCII, control
characters), with unknown nodes, unresolvable rejections and no nodes at all."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import orjson
import pytest

from policyext.cel import Timestamp
from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_texts
from policyext.policy.engine import Evaluation, prepare
from policyext.server import verbs, wire
from tests.server.kube import node, pod

AWKWARD_NAMES = [
    'quote"d',
    "back\\slash",
    "ünïcödé-节点",
    "emoji-\U0001f600",
    "tab\there",
    "nul\x00byte",
    "bell\x07",
    "del\x7f",
    "line\u2028separator",
    '","Score":10},{"Host":"forged',
    'ends-with-quote-comma",',
    "",
]
PLAIN_NAMES = [f"ip-10-0-{i}-7.eu-west-1.compute.internal" for i in range(12)]


@pytest.mark.parametrize(
    ("hosts", "scores"),
    [
        ([], []),
        (["a"], [0]),
        (PLAIN_NAMES, [i % 11 for i in range(12)]),
        (PLAIN_NAMES[:3], [10, 10, 10]),
        (["ünïcödé", "节点", "emoji-\U0001f600"], [1, 2, 3]),
        *(([name, "plain"], [4, 5]) for name in AWKWARD_NAMES),
        (AWKWARD_NAMES, list(range(len(AWKWARD_NAMES)))),
        (["a", "b"], [True, False]),  # as int() makes them
        (["a", "b"], [3.0, 7.9]),  # a float is truncated, as int() does
        (["a", "b"], [np.int64(4), np.int64(10)]),
        (["a", "b", "c"], [11, -1, 100]),  # outside 0..10: still as the plain encoding
    ],
)
def test_a_priority_list_from_hosts_and_scores_is_the_plain_encoding(
    hosts: list[str], scores: list[Any]
) -> None:
    plain = orjson.dumps([{"Host": h, "Score": int(s)} for h, s in zip(hosts, scores, strict=True)])
    assert wire.host_priorities(hosts, scores) == plain


def refusals(pairs: list[tuple[str, str]]) -> wire.Refusals:
    messages = list(dict.fromkeys(m for _, m in pairs))
    which = np.array([messages.index(m) for _, m in pairs], np.intp)
    return [n for n, _ in pairs], which, messages


MESSAGES = [
    "node is not ready",
    'a "quoted" message',
    "back\\slash; and more",
    "ünïcödé message 节点",
    "control\ncharacters\t\x01",
    "",
]


@pytest.mark.parametrize(
    ("feasible", "failed", "unresolvable"),
    [
        ([], [], []),
        (PLAIN_NAMES, [], []),
        ([], [(n, "no") for n in PLAIN_NAMES], []),
        ([], [], [(n, "gone") for n in PLAIN_NAMES]),
        (
            PLAIN_NAMES[:4],
            [(n, MESSAGES[i % len(MESSAGES)]) for i, n in enumerate(PLAIN_NAMES[4:9])],
            [(n, MESSAGES[-i]) for i, n in enumerate(PLAIN_NAMES[9:])],
        ),
        *(
            ([name], [("x", "m")], [("y", "u")])
            for name in AWKWARD_NAMES  # a feasible name that needs escapes
        ),
        *(
            (["ok"], [(name, "m"), ("plain", "n")], [])
            for name in AWKWARD_NAMES  # a failed name that needs escapes
        ),
        *(
            (["ok"], [], [("plain", "m"), (name, "n")])
            for name in AWKWARD_NAMES  # an unresolvable one
        ),
        (["ok"], [(n, m) for n, m in zip(PLAIN_NAMES, MESSAGES, strict=False)], []),
    ],
)
def test_a_names_filter_result_is_the_plain_encoding(
    feasible: list[str], failed: list[tuple[str, str]], unresolvable: list[tuple[str, str]]
) -> None:
    plain = wire.filter_result(None, feasible, dict(failed), dict(unresolvable))
    assert wire.names_filter_result(feasible, refusals(failed), refusals(unresolvable)) == plain


# two filters both policies below have: a message that needs escapes, an unresolvable one
SHARED_FILTERS = r"""
  - name: quoted
    expression: "!node.metadata.name.startsWith('q')"
    message: "a \"quoted\" \\ message, ünïcödé\n"
  - name: gone
    expression: "!node.metadata.name.startsWith('u')"
    message: "gone for good"
    unresolvable: true
"""
# filters whose messages need escapes, an unresolvable one, one whose message reads the
# node (each node's verdict of its own), one that errs on some nodes, and scores
POLICIES = (
    r"""
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: awkward}
spec:
  filters:
"""
    + SHARED_FILTERS
    + r"""  - name: own-words
    expression: "!node.metadata.name.startsWith('o')"
    messageExpression: "'node ' + node.metadata.name + ' said no'"
  - name: erring
    expression: "!node.metadata.name.startsWith('e') || node.metadata.labels.absent == 'x'"
  - name: also-quoted
    expression: "!node.metadata.name.startsWith('qq')"
    message: "\"again\""
  scores:
  - name: size
    weight: 2
    expression: "double(size(node.metadata.name)) / 3.0"
  - name: spread
    weight: 1
    normalize: MinMax
    expression: "double(size(node.metadata.name) % 5)"
"""
)


def names_for(kind: str) -> list[str]:
    """Node names for one kind of request: plain, with escapes, with prefixes that the
    rules above reject in each way."""
    plain = [f"node-{i}" for i in range(20)]
    awkward = [f"n-{name}" for name in AWKWARD_NAMES]
    rejected = ["q1", 'q"2', "qq3", "u1", "u\\2", "o1", "o\x013", "e1", "e2-ü", "qu"]
    return {
        "plain": plain,
        "plain, some rejected": plain + [n for n in rejected if "\\" not in n and '"' not in n],
        "awkward": awkward + rejected + plain,
        "rejected only": rejected,
        "one": ["node-0"],
    }[kind]


def source_of(names: list[str]) -> SnapshotSource:
    return SnapshotSource([{"kind": "Node", **node(n)} for n in names])


def plain_filter_reply(ev: Evaluation, unknown: list[str]) -> bytes:
    """What the reply is, written the straightforward way from each node's verdict."""
    failed = dict.fromkeys(unknown, verbs.UNKNOWN_NODE)
    unresolvable: dict[str, str] = {}
    for v in ev.nodes:
        if not v.feasible:
            (unresolvable if v.unresolvable else failed)[v.name] = v.message()
    feasible = [v.name for v in ev.nodes if v.feasible]
    return wire.filter_result(None, feasible, failed, unresolvable)


KINDS = ["plain", "plain, some rejected", "awkward", "rejected only", "one"]
UNKNOWN = ["not-there", 'not "there" either', "nowhere-ü"]
POD = pod("web")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("unknown", [[], UNKNOWN], ids=["all known", "some unknown"])
def test_filter_and_prioritize_replies_are_the_plain_encoding_of_the_evaluation(
    kind: str, unknown: list[str]
) -> None:
    known = names_for(kind)
    policies = load_policy_texts({"awkward.yaml": POLICIES})
    source = source_of(known)
    requested = unknown[:1] + known + unknown[1:]
    now = Timestamp(time.time_ns())
    filtered = verbs.run_filter(policies, source, wire.ExtenderArgs(POD, None, requested), now)
    assert filtered.evaluation is not None
    assert filtered.body == plain_filter_reply(filtered.evaluation, unknown)
    passed = json.loads(filtered.body)["NodeNames"]
    for names in (passed, requested):  # the nodes that passed, and all (unknown ones too)
        args = wire.ExtenderArgs(POD, None, names)
        prioritized = verbs.run_prioritize(policies, source, args, now)
        ev = prioritized.evaluation
        assert ev is not None
        scores = {v.name: v.score for v in ev.nodes}
        plain = [{"Host": n, "Score": scores.get(n) or 0} for n in names]
        assert prioritized.body == orjson.dumps(plain)


@pytest.mark.parametrize("kind", KINDS)
def test_the_node_by_node_evaluator_replies_the_same_way(kind: str) -> None:
    """Its verdicts are each node's own rather than masks: the replies take another path."""
    known = names_for(kind)
    policies = load_policy_texts({"awkward.yaml": POLICIES})
    source = source_of(known)
    nodes = [source.get_node(n) for n in known]
    now = Timestamp(time.time_ns())
    prepared = prepare(policies, POD, source, now)
    ev = prepared.evaluate(nodes, names=known, scores=False, detail=False, columns=False)
    unknown = dict.fromkeys(UNKNOWN, verbs.UNKNOWN_NODE)
    assert verbs.names_filter_reply(ev, unknown)[0] == plain_filter_reply(ev, UNKNOWN)
    scored = prepare(policies, POD, source, now).evaluate(
        nodes, names=known, filters=False, detail=False, columns=False
    )
    scores = {v.name: v.score for v in scored.nodes}
    plain = [{"Host": n, "Score": scores.get(n) or 0} for n in [*known, *UNKNOWN]]
    assert verbs.prioritize_reply(scored, [*known, *UNKNOWN]) == orjson.dumps(plain)


# rejections alone that every node they reject shares (plain), quoted, unresolvable
PLAIN_REJECTIONS = (
    r"""
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: plain}
spec:
  filters:
"""
    + SHARED_FILTERS
    + r"""  - name: also-quoted
    expression: "!node.metadata.name.startsWith('qq')"
    message: "\"again\""
  - name: last
    expression: "!node.metadata.name.startsWith('x')"
    message: "rejected by the last rule"
"""
)
# (the last rule's node first: the reply lists the refused nodes in the request's order,
# not in the order of the rules that refused them)
REFUSED = ["xz0", "qz1", 'qz"2', "qqz3", "uz1", "uz\\2", "quz", "qz-ü", "qqz\x01"]


@pytest.mark.parametrize("most", [0, 3, len(REFUSED) - 1, len(REFUSED), 13, 14, 256])
@pytest.mark.parametrize("kind", ["plain", "awkward"])
def test_a_reply_with_few_refused_nodes_is_written_node_by_node_to_the_same_bytes(
    most: int, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to verbs.FEW_REFUSED refused nodes (by rules whose rejection every node shares)
    the reply is written node by node rather than through arrays: the same bytes."""
    known = names_for(kind) + REFUSED
    policies = load_policy_texts({"plain.yaml": PLAIN_REJECTIONS})
    monkeypatch.setattr(verbs, "FEW_REFUSED", most)
    now = Timestamp(time.time_ns())
    args = wire.ExtenderArgs(POD, None, known)
    filtered = verbs.run_filter(policies, source_of(known), args, now)
    ev = filtered.evaluation
    assert ev is not None
    refused = len(known) - len(ev.feasible_names())
    assert (ev.few_refusals(most) is None) is (most < refused)
    assert filtered.body == plain_filter_reply(ev, [])
