"""`policyext explain NAMESPACE/POD`: why a pending pod waits. Every node with the reasons
of kube-scheduler's plugins (emulated) and of the policies, the node the scheduler would
pick if any, and the pod's last FailedScheduling event as the cluster (or the snapshot,
when it holds Events) recorded it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from policyext.cel import CELError, parse_timestamp
from policyext.cli import emulation
from policyext.cli.flags import (
    EXIT_INVALID,
    EXIT_OK,
    Commands,
    add_kubeconfig,
    add_output,
    fail,
    split_paths,
    usage,
)
from policyext.cli.inputs import (
    cluster_api,
    cluster_snapshot,
    configmap_rules,
    crd_rules,
    load_rules,
)
from policyext.cli.output import emit
from policyext.cli.tables import decision_table
from policyext.cluster.snapshot import (
    SnapshotError,
    SnapshotSource,
    read_objects,
    require_nodes,
)
from policyext.offline.explain import decision_to_dict
from policyext.offline.scheduler.decision import Decision, decide
from policyext.offline.whatif import is_pending
from policyext.policy import PolicySet

Json = dict[str, Any]


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "explain",
        help="why a pending pod waits: every node with the scheduler's and the policies' "
        "reasons, and its last FailedScheduling event",
    )
    parser.add_argument("pod", metavar="NAMESPACE/POD", help="the pending pod")
    rules = parser.add_mutually_exclusive_group(required=True)
    rules.add_argument(
        "--rules",
        action="extend",
        type=split_paths,
        metavar="PATH",
        help="the policies the extender serves (repeat it or separate paths with commas)",
    )
    rules.add_argument(
        "--rules-configmap",
        metavar="NAMESPACE/NAME",
        help="with --cluster: the policies of the ConfigMap the extender serves",
    )
    rules.add_argument(
        "--rules-crd",
        action="store_true",
        help="with --cluster: the cluster's SchedulingPolicy objects, as the extender serves "
        "them with --rules-crd (an object that does not load is left out, and said)",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--cluster", action="store_true", help="the live cluster (kubeconfig), listed once"
    )
    where.add_argument(
        "--snapshot", metavar="FILE", help="Nodes and Pods (and Events, if any) from a file"
    )
    add_kubeconfig(parser)
    parser.add_argument("--now", metavar="TIME", help="the time as `now` (RFC 3339)")
    emulation.add_flags(parser)
    add_output(parser, ("table", "json", "yaml"))
    parser.set_defaults(run=run)


def _wrong_combination(args: argparse.Namespace) -> str | None:
    if args.pod.count("/") != 1 or not all(args.pod.split("/")):
        return f"the pod is NAMESPACE/NAME, got {args.pod!r}"
    if (args.kubeconfig or args.context) and not args.cluster:
        return "--kubeconfig and --context go with --cluster"
    if args.rules_configmap and not args.cluster:
        return "--rules-configmap reads the live cluster: it goes with --cluster"
    if args.rules_crd and not args.cluster:
        return "--rules-crd reads the live cluster: it goes with --cluster"
    if args.rules_configmap and args.rules_configmap.count("/") != 1:
        return "--rules-configmap is NAMESPACE/NAME"
    return emulation.wrong_combination(args)


def last_failed_scheduling(events: Iterable[Json], namespace: str, name: str) -> Json | None:
    """The most recent FailedScheduling event of the pod among `events`."""
    mine = [
        e
        for e in events
        if e.get("reason") == "FailedScheduling"
        and (e.get("involvedObject") or {}).get("name") == name
        and (e.get("involvedObject") or {}).get("namespace", namespace) == namespace
    ]
    if not mine:
        return None
    return max(mine, key=_event_time)


def _event_time(event: Json) -> str:
    meta = event.get("metadata") or {}
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or meta.get("creationTimestamp")
        or ""
    )


def _event_to_dict(event: Json | None) -> Json | None:
    if event is None:
        return None
    return {
        "time": _event_time(event),
        "message": event.get("message", ""),
        "count": event.get("count"),
    }


def _table(decision: Decision, pod: str, event: Json | None) -> str:
    out = decision_table(decision)
    if event is None:
        return out + f"no FailedScheduling event recorded for {pod}\n"
    return out + f"last FailedScheduling event ({_event_time(event)}): {event.get('message', '')}\n"


def _find_pod(pods: Iterable[Json], namespace: str, name: str) -> Json | None:
    for p in pods:
        meta = p.get("metadata") or {}
        if meta.get("name") == name and meta.get("namespace", "default") == namespace:
            return p
    return None


def run(args: argparse.Namespace) -> int:
    wrong = _wrong_combination(args)
    if wrong is not None:
        return usage(wrong)
    namespace, name = args.pod.split("/")
    policies: PolicySet | None = load_rules(args.rules) if args.rules else None
    if args.rules and policies is None:
        return EXIT_INVALID
    try:
        now = parse_timestamp(args.now) if args.now else None
        events: list[Json]
        if args.cluster:
            from policyext.cluster.listing import (  # noqa: PLC0415 - kubernetes only for --cluster
                failed_scheduling_events,
            )

            api = cluster_api(args)
            if args.rules_crd:
                policies = crd_rules(api)
                if policies is None:
                    return EXIT_INVALID
            if policies is None:
                policies = configmap_rules(api, args.rules_configmap)
                if policies is None:
                    return EXIT_INVALID
            source = cluster_snapshot(args, api)
            events = failed_scheduling_events(api, namespace, name)
        else:
            objects = read_objects(Path(args.snapshot))
            source = require_nodes(SnapshotSource(objects, args.snapshot))
            events = [o for o in objects if o.get("kind") == "Event"]
    except (SnapshotError, CELError) as e:
        return fail(str(e))
    assert policies is not None
    pod = _find_pod(source.pods, namespace, name)
    where = "the cluster" if args.cluster else args.snapshot
    if pod is None:
        return fail(f"no pod {namespace}/{name} in {where}")
    if not is_pending(pod):
        node = (pod.get("spec") or {}).get("nodeName")
        state = f"is bound to {node}" if node else "is not pending"
        return fail(f"pod {namespace}/{name} {state}: explain answers for pending pods")
    nodes = list(source.nodes.values())
    decision = decide(
        policies,
        pod,
        nodes,
        source,
        now,
        emulation.cluster(args, nodes, source),
        extender_weight=args.extender_weight,
    )
    event = last_failed_scheduling(events, namespace, name)
    emit(
        args.output,
        lambda: {
            "pod": f"{namespace}/{name}",
            **decision_to_dict(decision),
            "lastFailedScheduling": _event_to_dict(event),
        },
        lambda: _table(decision, f"{namespace}/{name}", event),
        sys.stdout,
    )
    return EXIT_OK
