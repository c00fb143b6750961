"""The extender verbs over the engine: resolve nodes, evaluate, shape the protocol reply.

Views stay thin: each verb here takes parsed arguments and returns the reply bytes together
with the Evaluation it came from (for metrics and the decision log).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import orjson

from policyext.cel import Timestamp
from policyext.policy import (
    MAPS,
    NOT_LOADED,
    Evaluation,
    LiveNodeSource,
    NodeInfo,
    NodeRows,
    NodeSource,
    PolicySet,
    Prepared,
    Refused,
    evaluate,
    node_info_of,
    prepare,
    without_pods,
)
from policyext.server import remembered, wire
from policyext.server.remembered import Remembered, memo_key

UNKNOWN_NODE = "node is not in policyext's node cache"
# refused nodes up to which a NodeNames filter reply is written node by node (measured: it
# is then faster than through arrays; at 500 it is not)
FEW_REFUSED = 256
NO_SOURCE = (
    "policyext has no node source for NodeNames requests: run it with --snapshot or a "
    "cluster connection, or set nodeCacheCapable: false"
)

NOT_LOADED_MESSAGE = (
    "policyext has no policies loaded yet (its policy ConfigMap not read or not found): "
    "see its /readyz"
)


@dataclass
class VerbResult:
    body: bytes
    evaluation: Evaluation | None
    nodes: int
    error: str = ""
    pod: str = ""  # namespace/name, for the decision log
    # a NodeNames filter reply's NodeNames, as written and as a list: kube-scheduler sends
    # them back to prioritize (server/names.py)
    passed: Passed | None = None
    ahead: bool = False  # a prioritize reply worked out before the call (remembered.Ahead)
    # a filter call's pod side and the rows it found (None: its reply was remembered), for
    # the prioritize reply worked out after it
    prepared: Prepared | None = None
    rows: NodeRows | None = None

    def again(self, pod: str, prepared: Prepared) -> VerbResult:
        """This reply, for another pod with the same signature: the evaluation as it would
        have been counted (the pod-side evaluations only: the node results were cached)."""
        ev = self.evaluation
        if ev is not None:
            ev = replace(ev, evaluations=prepared.counters.evaluations)
        return VerbResult(
            self.body, ev, self.nodes, self.error, pod, self.passed, prepared=prepared
        )


Passed = tuple[bytes, list[str]]


# what filter and prioritize remember from one call for the next (remembered.py)
Memo = Remembered[VerbResult]
Ahead = remembered.Ahead[VerbResult]


def pod_id(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata")
    if not isinstance(meta, MAPS):
        return ""
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def _resolve(
    args: wire.ExtenderArgs, source: LiveNodeSource | None
) -> tuple[Sequence[Mapping[str, Any]] | NodeRows, list[str] | None, dict[str, str]]:
    """The nodes of the request (the rows of the node source's table for the names of a
    NodeNames request, or for Nodes the source holds in the versions sent; else the Node
    objects), their names when known without reading the nodes, and the names that could
    not be resolved."""
    if args.nodes is not None:
        same = _held_versions(source, args)
        return (same if same is not None else list(args.nodes)), None, {}
    assert source is not None
    requested = args.node_names or []
    rows = source.node_rows(requested)
    if rows.every_known():
        _check_slots(requested, rows.slots)
        return rows, rows.names, {}
    held = rows.known()
    missing = (~held).nonzero()[0].tolist()
    unknown = dict.fromkeys((requested[i] for i in missing), UNKNOWN_NODE)
    rows = rows.only(held)
    _check_slots(requested, rows.slots)  # (every name: an unknown one given twice too)
    return rows, rows.names, unknown


def check_repeats(names: list[str] | None) -> None:
    """WireError for NodeNames that name a node twice (the parser leaves it to the verbs)."""
    if names is not None and not wire.unique(names):
        raise wire.repeated(names)


def _check_slots(names: list[str], slots: npt.NDArray[np.intp]) -> None:
    """check_repeats for names the node source holds (`slots`: theirs)."""
    if _repeats(names, slots):
        raise wire.repeated(names)


def _repeats(names: list[str], slots: npt.NDArray[np.intp]) -> bool:
    """Whether a name comes twice among these the node source holds (`slots`: theirs, one
    slot per name), spared for a list given again (its slots are the very array found
    distinct before). A set of the names, whose hashes the lookups have just computed,
    costs less than a count per slot after a pause (29 against 50 µs for 230 names,
    cold): numpy's machinery is what a pause evicts."""
    global _distinct_slots  # noqa: PLW0603 - one reference, replaced whole
    if slots is _distinct_slots:
        return False
    if not wire.unique(names):
        return True
    if not slots.flags.writeable:
        _distinct_slots = slots
    return False


# the last slots found distinct, when they are the node table's own (read-only): a list of
# names given again (server/names.py) comes back as the very same slots (policy/rows.py)
_distinct_slots: npt.NDArray[np.intp] | None = None


def _held_versions(source: LiveNodeSource | None, args: wire.ExtenderArgs) -> NodeRows | None:
    """The rows of the node source for the Nodes of a NodeList request when the source
    holds every one of them in the very version sent (same name and resourceVersion, which
    the API server gives each content of an object once): the values kept for those
    versions then answer, as for NodeNames. None when any node is another version."""
    nodes = args.nodes
    if source is None or not nodes:
        return None
    if args.item_names is not None and args.item_versions is not None:
        names, versions = args.item_names, args.item_versions  # read without the Nodes
    else:  # (the parser has checked that each Node has metadata with a name)
        names = [node["metadata"]["name"] for node in nodes]
        versions = [node["metadata"].get("resourceVersion", "") for node in nodes]
    rows = source.node_rows(names)
    if not rows.every_known() or _repeats(names, rows.slots):
        return None
    for record, version in zip(rows.records(), versions, strict=True):
        # (a node held under a name the request gives has metadata: the name is in it)
        if not version or record.node["metadata"].get("resourceVersion") != version:
            return None
    return rows


def source_problem(
    args: wire.ExtenderArgs, source: LiveNodeSource | None, policies: PolicySet | None = None
) -> str:
    if policies is NOT_LOADED:
        return NOT_LOADED_MESSAGE
    if args.nodes is not None:
        return ""
    if source is None:
        return NO_SOURCE
    if not source.ready():
        return "policyext's node cache is not synced yet"
    return ""


def _recall(
    verb: str,
    memo: Memo | None,
    policies: PolicySet,
    prepared: Prepared,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
) -> tuple[Hashable | None, VerbResult | None]:
    """The memo key of a NodeNames call (None when its reply cannot be reused), and the
    reply remembered under it, if any."""
    names = args.node_names
    if memo is None or names is None or not memo.asked_before(verb, names):
        return None, None
    key = memo_key(verb, prepared, source, names)
    known = memo.get(policies, key) if key is not None else None
    return key, known.again(pod_id(args.pod), prepared) if known is not None else None


def _remember(
    memo: Memo | None, policies: PolicySet, key: Hashable | None, result: VerbResult
) -> None:
    # a reply the deadline cut short is not the nodes' own answer: never reused
    ev = result.evaluation
    if memo is not None and key is not None and ev is not None and not ev.timed_out:
        # the reply, not the call's working state: a reply given again takes the pod side
        # of its own call (`again`), and the rows would hold old node records alive
        memo.put(policies, key, replace(result, prepared=None, rows=None))


class _Answered(NamedTuple):
    known: VerbResult | None  # the remembered reply (then nothing else is set)
    key: Hashable | None  # the memo key
    evaluation: Evaluation
    nodes: Sequence[Mapping[str, Any]]  # the Node objects of a NodeList call
    unknown: dict[str, str]  # the names that could not be resolved
    prepared: Prepared  # the pod side
    rows: NodeRows | None  # the rows of the node source's table evaluated


def _answer(
    verb: str,
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    memo: Memo | None,
    deadline: float | None,
) -> _Answered:
    """A filter or prioritize call up to the engine's answer."""
    prepared = prepare(policies, args.pod, source, now, deadline=deadline)
    key, known = _recall(verb, memo, policies, prepared, source, args)
    if known is not None:
        return _Answered(known, key, known.evaluation, [], {}, prepared, None)  # type: ignore[arg-type]
    nodes, names, unknown = _resolve(args, source)
    # (the nodes are rows of the node source's table, whose values it keeps, or the
    # request's own Node objects, whose values are not kept: another version, maybe)
    filters = verb == "filter"
    ev = prepared.evaluate(nodes, names=names, filters=filters, scores=not filters, detail=False)
    rows = nodes if isinstance(nodes, NodeRows) else None
    return _Answered(None, key, ev, args.nodes or [], unknown, prepared, rows)


def run_filter(
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    memo: Memo | None = None,
    deadline: float | None = None,
) -> VerbResult:
    names_mode = args.nodes is None
    problem = source_problem(args, source, policies)
    if problem:
        check_repeats(args.node_names)
        body = wire.filter_result(
            None if names_mode else [], [] if names_mode else None, {}, {}, problem
        )
        return VerbResult(body, None, len(args.names), problem, pod_id(args.pod))
    answered = _answer("filter", policies, source, args, now, memo, deadline)
    if answered.known is not None:
        return answered.known
    ev, unknown = answered.evaluation, answered.unknown
    passed: Passed | None = None
    if names_mode:
        body, passed = names_filter_reply(ev, unknown)
    else:
        originals = args.raw_nodes if args.raw_nodes is not None else answered.nodes
        body = nodes_filter_reply(ev, originals)
    result = VerbResult(
        body,
        ev,
        len(args.names),
        pod=pod_id(args.pod),
        passed=passed,
        prepared=answered.prepared,
        rows=answered.rows,
    )
    _remember(memo, policies, answered.key, result)
    return result


def run_prioritize(
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    memo: Memo | None = None,
    deadline: float | None = None,
) -> VerbResult:
    """A score 0..10 for every node of the request (0 for a node that cannot be resolved)."""
    if source_problem(args, source, policies):
        check_repeats(args.node_names)
        zeros = wire.host_priorities(args.names, [0] * len(args.names))
        return VerbResult(zeros, None, len(args.names), pod=pod_id(args.pod))
    answered = _answer("prioritize", policies, source, args, now, memo, deadline)
    if answered.known is not None:
        return answered.known
    ev = answered.evaluation
    body = prioritize_reply(ev, args.names)
    result = VerbResult(body, ev, len(args.names), pod=pod_id(args.pod))
    _remember(memo, policies, answered.key, result)
    return result


def prioritize_ahead(
    policies: PolicySet,
    source: LiveNodeSource | None,
    pod: wire.Json,
    names: list[str],
    now: Timestamp,
    deadline: float | None = None,
    filtered: VerbResult | None = None,
) -> tuple[NodeRows, VerbResult] | None:
    """What `run_prioritize` answers a NodeNames call about `names` for `pod`, and the rows
    it scored (in the versions it scored), worked out before the call (remembered.Ahead);
    None when it would not be the nodes' own answer (the deadline cut it short) or it is
    not worth keeping (no node source, nodes it does not know, a name twice). `filtered`:
    the answer of the filter call under the same policies that passed them, whose pod side
    and rows are used (up) here (the caller has checked that scoring does not read the
    time)."""
    if source is None or source_problem(wire.ExtenderArgs(pod, None, names), source, policies):
        return None  # (run_prioritize answers zeros)
    rows = _passed(filtered, names) if filtered is not None else None
    if rows is None:
        rows = source.node_rows(names)
        if not rows.every_known() or _repeats(names, rows.slots):
            return None
    reused = filtered.prepared.for_scores(deadline) if filtered and filtered.prepared else None
    prepared = reused or prepare(policies, pod, source, now, deadline=deadline)
    ev = prepared.evaluate(rows, filters=False, scores=True, detail=False)
    if ev.timed_out:
        return None
    body = prioritize_reply(ev, names)
    return rows, VerbResult(body, ev, len(names), pod=pod_id(pod), ahead=True)


def _passed(filtered: VerbResult, names: list[str]) -> NodeRows | None:
    """The rows of a filter call's nodes it passed (`names`), as the call found them."""
    rows, ev = filtered.rows, filtered.evaluation
    if rows is None or ev is None:
        return None
    passed = rows.only(~ev.infeasible())
    return passed if passed.names == names else None


def nodes_filter_reply(ev: Evaluation, originals: Sequence[object]) -> bytes:
    """ExtenderFilterResult of an evaluation in Nodes mode: the nodes that passed
    (`originals` are the request's nodes, as objects or as the bytes they came in), then
    the failed nodes (every node is the request's own: none is unknown)."""
    rejected, unresolvable = ev.rejected()
    passed = list(itertools.compress(originals, (~ev.infeasible()).tolist()))
    return wire.filter_result(passed, None, rejected, unresolvable)  # type: ignore[arg-type]


def names_filter_reply(ev: Evaluation, unknown: Mapping[str, str]) -> tuple[bytes, Passed]:
    """ExtenderFilterResult of an evaluation in NodeNames mode (the names that passed, then
    the failed nodes, those the node source did not know first), and the NodeNames it
    lists. Up to FEW_REFUSED refused nodes, all by rejections they share, it is written
    node by node; past that (or with verdicts of a node's own) through arrays."""
    few = None if unknown else ev.few_refusals(FEW_REFUSED)
    if few is not None:
        feasible, failed_, unresolvable_ = few
        encoded = orjson.dumps(feasible)
        return wire.names_filter_dicts(encoded, failed_, unresolvable_), (encoded, feasible)
    feasible, failed, unresolvable = ev.filter_outcome()
    if unknown:  # first, as the request named them
        failed = Refused(
            [*unknown, *failed.names],
            np.concatenate((np.full(len(unknown), len(failed.messages)), failed.message)),
            [*failed.messages, UNKNOWN_NODE],
        )
    encoded = orjson.dumps(feasible)
    return wire.names_filter_result(feasible, failed, unresolvable, encoded), (encoded, feasible)


def prioritize_reply(ev: Evaluation, names: list[str]) -> bytes:
    """HostPriorityList for every name of the request, in its order: its final score, 0
    for a node the node source did not know (not in the evaluation). A NodeList that sends
    a node twice is scored copy by copy, each with its own score."""
    if ev.names == names:
        return wire.host_priorities(names, ev.scores_in_order())
    # some names unknown (NodeNames, which never repeat a name): looked up by name
    scores = ev.final_scores()
    return wire.host_priorities(names, [scores.get(n, 0) for n in names])


def run_explain(
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.ExtenderArgs,
    now: Timestamp,
    deadline: float | None = None,
) -> tuple[Evaluation, dict[str, str]]:
    problem = source_problem(args, source, policies)
    if problem:
        raise wire.WireError(problem)
    if args.nodes is None and args.node_names is None:
        # no nodes named: every node of the node source
        every = getattr(source, "node_names", None)
        args = replace(args, node_names=every() if callable(every) else [])
    nodes, names, unknown = _resolve(args, source)
    prepared = prepare(policies, args.pod, source, now, deadline=deadline)
    return prepared.evaluate(nodes, names=names), unknown


class _VictimFreeSource:
    """The node source as the engine sees it once the victims of a preemption are evicted:
    a NodeSource (the engine's contract: a node by name, its rows, its information) whose
    node information is never the wrapped source's (the victims change it), so it keeps
    nothing for its nodes. Only the engine reads it: the server's own source answers
    everything else."""

    def __init__(
        self, base: LiveNodeSource | None, victims: dict[str, list[Mapping[str, Any]]]
    ) -> None:
        self.base = base
        self.victims = victims

    def node_rows(self, names: Sequence[str]) -> None:
        return None  # what the rules read here is not the nodes' alone: never kept

    def get_node(self, name: str) -> Mapping[str, Any] | None:
        return self.base.get_node(name) if self.base is not None else None

    def node_info(self, node: Mapping[str, Any]) -> NodeInfo:
        info = (
            self.base.node_info(node) if self.base is not None else node_info_of(node, None, None)
        )
        name = str((node.get("metadata") or {}).get("name", ""))
        return without_pods(info, self.victims.get(name, []))


def run_preempt(
    policies: PolicySet,
    source: LiveNodeSource | None,
    args: wire.PreemptionArgs,
    now: Timestamp,
    deadline: float | None = None,
) -> VerbResult:
    """Keep the candidate nodes on which the policies accept the pod once the victims are
    gone. Victims given as UIDs only are looked up in the node source's pods."""
    nodes: list[Mapping[str, Any]] = []
    victims: dict[str, list[Mapping[str, Any]]] = {}
    for name, v in args.victims.items():
        node = source.get_node(name) if source is not None else None
        if node is None:
            continue  # a node we cannot see cannot be accepted
        nodes.append(node)
        if args.meta:
            assert source is not None  # (a node was found in it)
            pods = [source.pod_by_uid(uid) for uid in v.uids]
            victims[name] = [p for p in pods if p is not None]
        else:
            victims[name] = list(v.pods)
    free: NodeSource = _VictimFreeSource(source, victims)  # (mypy checks it is whole)
    ev = evaluate(policies, args.pod, nodes, free, now, scores=False, deadline=deadline)
    accepted = {name: args.victims[name] for name in ev.feasible_names()}
    return VerbResult(wire.preemption_result(accepted), ev, len(args.victims))
