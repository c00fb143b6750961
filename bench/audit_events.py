"""Is an Event per Audit finding affordable? Measured on one real kube-apiserver (the e2e
control plane), as the extender's identity:

1. creating Events one after the other, as the recorder's thread does: the time per
   create and how many one thread can create a second;
2. on the request path, what handing a finding to the recorder costs (`offer`: a queue
   put), against evaluating the filter that produced it, in the same run.

`python -m bench.audit_events` prints the figures docs/operations.md quotes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from policyext.cluster.audit_events import AuditEvents, AuditFinding, event_body
from policyext.cluster.cache import ClusterSource
from policyext.cluster.client import ApiClients, ClusterSettings, api_clients
from policyext.policy import evaluate, load_policy_texts
from tests.e2e.binaries import ensure_binaries
from tests.e2e.controlplane import POLICYEXT, ControlPlane
from tests.e2e.policies import AUDIT_SPOT_NODES
from tests.e2e.rbac import grant_extender_rbac, wait_until_granted

CREATES = 300
NODES = 500
FILTERS = 200
OFFERS = 2000


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return f"median {statistics.median(ordered) * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms"


def _nodes() -> list[dict[str, Any]]:
    return [
        {
            "metadata": {
                "name": f"node-{i}",
                "labels": {"lifecycle": "spot"} if i % 10 == 0 else {},
            },
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
        for i in range(NODES)
    ]


def measure_creates(api: ApiClients) -> None:
    core = api.core
    times = []
    started = time.perf_counter()
    for i in range(CREATES):
        finding = AuditFinding("default", f"bench-{i}", f"uid-{i}", "v1", (("p/r", 3, ("a",)),))
        t0 = time.perf_counter()
        core.create_namespaced_event("default", event_body(finding, "bench"))  # type: ignore[arg-type]
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - started
    print(f"Event create, one thread, {CREATES} in a row: {_ms(times)}; {CREATES / total:.0f}/s")


def measure_hot_path(api: ApiClients) -> None:
    policies = load_policy_texts({"rollout.yaml": AUDIT_SPOT_NODES})
    nodes = _nodes()
    pod = {"metadata": {"name": "web", "namespace": "default", "uid": "u"}, "spec": {}}
    filter_times = []
    ev = None
    for _ in range(FILTERS):
        t0 = time.perf_counter()
        ev = evaluate(policies, pod, nodes, scores=False)
        ev.tally()  # (the metrics compute it for every answer)
        filter_times.append(time.perf_counter() - t0)
    assert ev is not None and ev.tally().audits
    # a node cache never started: the offers are timed, and the thread's checks find none
    # of these made-up pods in the cluster (counted as unverified, no Event)
    recorder = AuditEvents(api, ClusterSource(api), "bench", rate=5.0, queue_size=OFFERS + 1)
    offer_times = []
    for i in range(OFFERS):
        named = {"metadata": {"name": f"web-{i}", "namespace": "default", "uid": f"u-{i}"}}
        t0 = time.perf_counter()
        recorder.offer(named, ev)
        offer_times.append(time.perf_counter() - t0)
    filter_median = statistics.median(filter_times)
    offer_median = statistics.median(offer_times)
    print(f"filter of {NODES} nodes (engine alone): {_ms(filter_times)}")
    print(
        f"offer (queue put): median {offer_median * 1e6:.1f} us,"
        f" {offer_median / filter_median:.4f} of the filter"
    )
    print(f"recorder after the offers: {recorder.counts}")


def main() -> int:
    with (
        tempfile.TemporaryDirectory(prefix="policyext-audit-events-") as work,
        ControlPlane(ensure_binaries(), Path(work)) as plane,
    ):
        admin = plane.client()
        grant_extender_rbac(admin)
        wait_until_granted(plane.client(POLICYEXT))
        kubeconfig = plane.write_kubeconfig(POLICYEXT, Path(work) / "policyext.kubeconfig")
        api = api_clients(ClusterSettings(str(kubeconfig), False))
        assert api is not None
        measure_creates(api)
        measure_hot_path(api)
    return 0


if __name__ == "__main__":
    sys.exit(main())
