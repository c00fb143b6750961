"""The bind verb: a Binding is created only when it is one kube-scheduler would ask for.

/bind writes to the cluster on the word of whoever reaches the verbs' port, so nothing in
the request is taken on trust but the names it asks about: the pod is the node cache's (or
the API server's, when the cache does not hold it yet), the node the node cache's, and the
bind goes ahead only when

- the extender was started to bind (`--bind-verb`),
- the request names the pod by its UID, and the pod with that name has that UID,
- the pod is one of a scheduler the extender binds for (`--scheduler-name`),
- the pod is not bound yet (bound to the asked node already: a retried bind, answered as
  done without binding again),
- the node is in the node cache and passes the pod's Enforce filters, evaluated by the
  engine as filter evaluates them.

Every refusal is a reply with `Error` (the protocol's way: status 200), a log line and one
count of `policyext_bind_refusals_total` by `reason` (one of REASONS). The verb's one
entrance (`Verbs.answer`, server/entrance.py) answers with `BindVerb.answer`, whichever
lane or view carries the call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from policyext.cel import Timestamp
from policyext.policy import MAPS, NOT_LOADED, LiveNodeSource, prepare
from policyext.server import verbs, wire
from policyext.store import PolicyStore

if TYPE_CHECKING:
    from policyext.server.metrics import Metrics

log = logging.getLogger("policyext.server")

# the schedulerName the API server gives a pod that names none
DEFAULT_SCHEDULER: Final = "default-scheduler"

# policyext_bind_refusals_total's reasons: a fixed set, whatever callers send
DISABLED: Final = "disabled"  # started without --bind-verb
NO_CLUSTER: Final = "no_cluster"  # no API connection to bind with
NOT_READY: Final = "not_ready"  # no policies loaded, or the node cache not synced
NO_UID: Final = "no_uid"  # PodUID empty
NO_POD: Final = "no_pod"  # no pod of that name
POD_UNREADABLE: Final = "pod_unreadable"  # the API server could not be asked
OTHER_UID: Final = "other_uid"  # the pod of that name has another UID
OTHER_SCHEDULER: Final = "other_scheduler"  # its schedulerName is not one of ours
BOUND_ELSEWHERE: Final = "bound_elsewhere"  # already bound to another node
NO_NODE: Final = "no_node"  # the node is not in the node cache
FILTERED: Final = "filtered"  # an Enforce filter rejects the node for the pod
FAILED: Final = "failed"  # the API server did not create the Binding
REASONS: Final = (
    DISABLED,
    NO_CLUSTER,
    NOT_READY,
    NO_UID,
    NO_POD,
    POD_UNREADABLE,
    OTHER_UID,
    OTHER_SCHEDULER,
    BOUND_ELSEWHERE,
    NO_NODE,
    FILTERED,
    FAILED,
)

DISABLED_MESSAGE: Final = (
    "this extender does not bind pods: it runs without --bind-verb (kube-scheduler's "
    "bindVerb needs policyext serve --bind-verb)"
)
NO_CLUSTER_MESSAGE: Final = "this extender has no connection to the Kubernetes API to bind with"


class Binder(Protocol):
    """Reads pods and creates Bindings in the cluster (cluster.binder.ClusterBinder)."""

    def find_pod(self, namespace: str, name: str, uid: str) -> tuple[Mapping[str, Any] | None, str]:
        """The pod of that name: the node cache's when it holds it with this UID, else the
        API server's. (None, "") when there is none; (None, why) when it cannot be read."""
        ...

    def bind(self, args: wire.BindingArgs, pod: Mapping[str, Any] | None = None) -> str:
        """Create the binding; "" on success or a message saying what failed."""
        ...


class Refusal(NamedTuple):
    reason: str  # one of REASONS
    message: str


class BindVerb:
    """Answers /bind: decides, then binds through the binder, counts and logs refusals."""

    def __init__(
        self,
        store: PolicyStore,
        source: LiveNodeSource | None,
        binder: Binder | None,
        metrics: Metrics,
        *,
        enabled: bool,
        scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,),
        clock: Callable[[], int] = time.time_ns,
        request_deadline: float | None = None,
    ) -> None:
        self.store = store
        self.source = source
        self.binder = binder
        self.metrics = metrics
        self.enabled = enabled
        self.scheduler_names = scheduler_names
        self.clock = clock
        self.request_deadline = request_deadline

    def answer(self, args: wire.BindingArgs) -> verbs.VerbResult:
        """The ExtenderBindingResult: no Error once the pod is bound to the node."""
        refusal = self.decide(args)
        message = ""
        if refusal is not None:
            message = refusal.message
            self.metrics.bind_refused(refusal.reason)
            # quoted: the names in it are the caller's, whatever they hold
            log.warning("bind refused (%s): %r", refusal.reason, message)
        pod = f"{args.pod_namespace}/{args.pod_name}"
        return verbs.VerbResult(wire.binding_result(message), None, 1, message, pod)

    def decide(self, args: wire.BindingArgs) -> Refusal | None:
        """Bind the pod when every check passes (None: bound, now or before); else why not."""
        if not self.enabled:
            return Refusal(DISABLED, DISABLED_MESSAGE)
        binder, source = self.binder, self.source
        if binder is None or source is None:
            return Refusal(NO_CLUSTER, NO_CLUSTER_MESSAGE)
        asked = f"pod {args.pod_namespace}/{args.pod_name}"
        if not args.pod_uid:
            return Refusal(NO_UID, f"PodUID is empty: policyext binds {asked} only by its UID")
        policies = self.store.current  # once: the checks see one version
        if policies is NOT_LOADED:
            return Refusal(NOT_READY, verbs.NOT_LOADED_MESSAGE)
        if not source.ready():
            return Refusal(NOT_READY, "policyext's node cache is not synced yet")
        pod, problem = binder.find_pod(args.pod_namespace, args.pod_name, args.pod_uid)
        if problem:
            return Refusal(POD_UNREADABLE, problem)
        if pod is None:
            return Refusal(NO_POD, f"{asked} does not exist")
        refusal = self._pod_refusal(args, asked, pod)
        if refusal is not None or _field(pod, "spec", "nodeName") == args.node:
            return refusal  # (bound there already: a retried bind, done)
        node = source.get_node(args.node)
        if node is None:
            return Refusal(NO_NODE, f"node {args.node} is not in policyext's node cache")
        deadline = (
            time.perf_counter() + self.request_deadline
            if self.request_deadline is not None
            else None
        )
        prepared = prepare(policies, pod, source, Timestamp(self.clock()), deadline=deadline)
        ev = prepared.evaluate([node], names=[args.node], scores=False, cache_nodes=True)
        if bool(ev.infeasible()[0]):
            failed, unresolvable = ev.rejected()
            why = failed.get(args.node) or unresolvable.get(args.node, "")
            return Refusal(
                FILTERED, f"node {args.node} does not pass the policies for {asked}: {why}"
            )
        failure = binder.bind(args, pod)
        return Refusal(FAILED, failure) if failure else None

    def _pod_refusal(
        self, args: wire.BindingArgs, asked: str, pod: Mapping[str, Any]
    ) -> Refusal | None:
        """Why this pod may not be bound to the node, whatever the node."""
        uid = _field(pod, "metadata", "uid")
        if uid != args.pod_uid:
            return Refusal(OTHER_UID, f"{asked} has UID {uid}, not {args.pod_uid}")
        scheduler = _field(pod, "spec", "schedulerName") or DEFAULT_SCHEDULER
        if scheduler not in self.scheduler_names:
            ours = ", ".join(self.scheduler_names)
            return Refusal(
                OTHER_SCHEDULER,
                f"{asked} is for scheduler {scheduler}; this extender binds only the pods of "
                f"{ours} (--scheduler-name)",
            )
        bound = _field(pod, "spec", "nodeName")
        if bound and bound != args.node:
            return Refusal(
                BOUND_ELSEWHERE, f"{asked} is already bound to node {bound}, not {args.node}"
            )
        return None


def _field(obj: Mapping[str, Any], part: str, key: str) -> str:
    section = obj.get(part)
    value = section.get(key) if isinstance(section, MAPS) else None
    return value if isinstance(value, str) else ""
