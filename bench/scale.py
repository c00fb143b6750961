"""`python -m bench.scale` (`make bench-scale`): the live caches at SIG Scalability's
envelope (5,000 nodes, 150,000 pods) against today's benchmark sizes.

Each size runs in a process of its own, which holds what a serving worker holds: the
policy set and a `ClusterSource` (the node and pod caches of `policyext serve
--kubeconfig`), fed through the seam its watches use (`replace` with a list, `apply` with
a watch event) rather than through a real API server: loading 150,000 pods into the
test harness's etcd and kube-apiserver takes longer than this whole benchmark on a small
machine (docs/benchmarks-scale.md gives the rate measured). The objects
are shaped like the API's: nodes from the benchmark workload (bench/workload.py: images,
conditions, labels as a cloud's nodes carry them), pods with what the API server and a
kubelet fill in (defaults, a projected service-account volume, tolerations, status
conditions, container statuses, managed fields). The list arrives as the reflector reads
it, pages of 500 decoded one by one; a watch event as its line of bytes.

Measured in each process:
- memory: resident set before the first list, after it (the caches alone, the pages
  freed), and its peak;
- the first sync: CPU seconds to decode the pages and fill the caches (what stands
  between a list and /readyz);
- a pod watch event: CPU microseconds per ADDED (a pod bound), MODIFIED (its status
  changed) and DELETED, decoding included;
- churn: 100 pod creates and 100 deletes a second for ten minutes (60,000 of each, run
  back to back): the CPU share at that rate, and the resident set before and after;
- a 500-name NodeNames filter and prioritize (the benchmark pod and policy, through the
  direct lane as the worker's event loop calls it), a pod bound to one of the 500 nodes
  between two calls as live (so no node's cached verdict serves twice): median CPU ms.

Printed as a table; `--output` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from bench import workload
from bench.server import peak_mb, rss_mb

Json = dict[str, Any]
PAGE: Final = 500  # items per list page, as the reflector asks (watch.PAGE_SIZE)
# (name, nodes, pods per node): today's benchmark sizes, then the envelope
SIZES: Final = (
    ("500 nodes, 5 pods each", 500, 5),
    ("5,000 nodes, 5 pods each", 5_000, 5),
    ("5,000 nodes, 30 pods each", 5_000, 30),
)
NAMES: Final = 500  # node names in a filter call, as the benchmark's calls
CALLS: Final = 300
EVENTS: Final = 3_000  # of each kind
CHURN: Final = 60_000  # creates (and as many deletes): ten minutes at 100 a second
TEAMS: Final = ("payments", "search", "checkout", "ml", "data", "platform", "web")


# --- objects shaped like the API's ---------------------------------------------------------


def api_pod(rng: random.Random, node: str, index: int) -> Json:
    """A Deployment's pod as a list or watch returns it once its kubelet runs it."""
    team = rng.choice(TEAMS)
    app = f"{team}-svc-{rng.randrange(40)}"
    hash_ = f"{rng.getrandbits(36):09x}"
    name = f"{app}-{hash_}-{rng.getrandbits(20):05x}"
    cpu = rng.choice((50, 100, 250, 500))
    started = f"2026-11-30T08:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z"
    token = f"kube-api-access-{rng.getrandbits(20):05x}"
    ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    meta: Json = {
        "name": name,
        "generateName": f"{app}-{hash_}-",
        "namespace": team,
        "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "resourceVersion": str(10_000_000 + index),
        "creationTimestamp": started,
        "labels": {"app.kubernetes.io/name": app, "pod-template-hash": hash_, "team": team},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"{app}-{hash_}",
                "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [
            {
                "manager": manager,
                "operation": "Update",
                "apiVersion": "v1",
                "time": started,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}},
            }
            for manager in ("kube-controller-manager", "kubelet")
        ],
    }
    container = {
        "name": "app",
        "image": f"registry.example/{team}/{app}:v1.{rng.randrange(30)}.0",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [{"name": "TEAM", "value": team}, {"name": "LOG_LEVEL", "value": "info"}],
        "resources": {
            "requests": {"cpu": f"{cpu}m", "memory": f"{cpu * 2}Mi"},
            "limits": {"memory": f"{cpu * 4}Mi"},
        },
        "volumeMounts": [
            {
                "name": token,
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            }
        ],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    spec: Json = {
        "volumes": [
            {
                "name": token,
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                    }
                                ]
                            }
                        },
                    ],
                    "defaultMode": 420,
                },
            }
        ],
        "containers": [container],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "nodeName": node,
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {
                "key": f"node.kubernetes.io/{what}",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
            for what in ("not-ready", "unreachable")
        ],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    conditions = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    ]
    status: Json = {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": started,
        "containerStatuses": [
            {
                "name": "app",
                "state": {"running": {"startedAt": started}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": container["image"],
                "imageID": f"{container['image']}@sha256:{rng.getrandbits(256):064x}",
                "containerID": f"containerd://{rng.getrandbits(256):064x}",
                "started": True,
            }
        ],
        "qosClass": "Burstable",
    }
    return {"metadata": meta, "spec": spec, "status": status}


def _pages(items: Iterator[Json], kind: str) -> Iterator[bytes]:
    """A list's pages as the API server sends them (each a JSON body of PAGE items)."""
    page: list[Json] = []
    for item in items:
        page.append(item)
        if len(page) == PAGE:
            yield orjson.dumps({"kind": kind, "metadata": {}, "items": page})
            page = []
    if page:
        yield orjson.dumps({"kind": kind, "metadata": {}, "items": page})


def write_cluster(folder: Path, nodes: int, per_node: int) -> None:
    """nodes.jsonl and pods.jsonl (one list page a line) and the node names."""
    cluster = workload.generate(nodes)
    rng = random.Random(f"scale:{nodes}:{per_node}")
    names = cluster.node_names()
    with (folder / "nodes.jsonl").open("wb") as out:
        for page in _pages(iter(cluster.nodes), "NodeList"):
            out.write(page + b"\n")
    pods = (api_pod(rng, names[i // per_node], i) for i in range(nodes * per_node))
    with (folder / "pods.jsonl").open("wb") as out:
        for page in _pages(pods, "PodList"):
            out.write(page + b"\n")
    (folder / "names.json").write_bytes(orjson.dumps(names))


# --- the measuring process -----------------------------------------------------------------


@dataclass
class Figures:
    size: str
    nodes: int
    pods: int
    rss_start_mb: float  # policies loaded, caches empty
    rss_synced_mb: float  # after the first list, its pages freed
    peak_mb: float
    first_sync_s: float  # CPU: pages decoded and the caches filled
    full_collection_ms: float  # one full garbage collection once synced (the GIL held)
    added_us: float
    modified_us: float
    deleted_us: float
    churn_cpu_share: float  # of one core, at 100 creates and 100 deletes a second
    rss_before_churn_mb: float
    rss_after_churn_mb: float
    filter_ms: float
    prioritize_ms: float


def measure(folder: Path, size: str) -> Figures:
    from kubernetes import client as k8s

    from bench import policy
    from bench.replay import quiet_decision_log
    from policyext.cluster.cache import ClusterSource, listed_pod
    from policyext.cluster.client import ApiClients
    from policyext.server.entrance import Verbs
    from policyext.server.lanes import direct_lane, hot_paths
    from policyext.server.metrics import Metrics
    from policyext.store import PolicyStore

    quiet_decision_log()
    store = PolicyStore()
    policies = policy.compiled()
    store.reload(lambda: policies, "bench.scale")
    source = ClusterSource(ApiClients.over(k8s.ApiClient()))  # fed by hand: it never connects
    lane = direct_lane(Verbs(store, source, Metrics(), time.time_ns, ""), hot_paths(""), 64 << 20)
    names: list[str] = orjson.loads((folder / "names.json").read_bytes())
    gc.collect()
    me = os.getpid()
    rss_start = rss_mb(me)

    cpu = time.process_time()
    for resource, keep in (("nodes", None), ("pods", listed_pod)):
        items: list[Json] = []
        with (folder / f"{resource}.jsonl").open("rb") as pages:
            for line in pages:  # as the reflector lists (cluster/watch.py)
                found = orjson.loads(line)["items"]
                items.extend(map(keep, found) if keep is not None else found)
                del found
        source.replace(resource, items)
        del items
    first_sync = time.process_time() - cpu
    gc.collect()
    rss_synced = rss_mb(me)
    started = time.perf_counter()
    gc.collect()  # what a full collection costs now: the GIL is held throughout
    full_collection = time.perf_counter() - started
    pod_count = sum(len(source.node_info(n)["pods"]) for n in _nodes(source, names))

    rng = random.Random(f"events:{size}")
    fresh = [api_pod(rng, rng.choice(names), 90_000_000 + i) for i in range(EVENTS)]
    added = [_event("ADDED", p) for p in fresh]
    modified = [_event("MODIFIED", _restarted(p)) for p in fresh]
    deleted = [_event("DELETED", p) for p in fresh]
    per_event = {
        kind: _per_event_us(source, lines)
        for kind, lines in (("ADDED", added), ("MODIFIED", modified), ("DELETED", deleted))
    }

    churn = [api_pod(rng, rng.choice(names), 95_000_000 + i) for i in range(1_000)]
    create = [_event("ADDED", p) for p in churn]
    delete = [_event("DELETED", p) for p in churn]
    gc.collect()
    rss_before_churn = rss_mb(me)
    cpu = time.process_time()
    for i in range(CHURN):
        j = i % len(churn)
        source.apply("pods", "ADDED", orjson.loads(create[j])["object"])
        if i >= len(churn) // 2:  # half of them live at any time
            k = (i - len(churn) // 2) % len(churn)
            source.apply("pods", "DELETED", orjson.loads(delete[k])["object"])
    churn_cpu = time.process_time() - cpu
    gc.collect()
    rss_after_churn = rss_mb(me)

    asked = sorted(random.Random(f"names:{size}").sample(names, min(NAMES, len(names))))
    body = orjson.dumps({"Pod": workload.benchmark_pod(), "Nodes": None, "NodeNames": asked})
    binds = [api_pod(rng, rng.choice(asked), 97_000_000 + i) for i in range(CALLS)]
    seconds: dict[str, list[float]] = {"filter": [], "prioritize": []}
    for bound in binds:
        for verb in ("filter", "prioritize"):
            started = time.process_time()
            answer = lane(f"/{verb}", body)
            seconds[verb].append(time.process_time() - started)
            if answer is None:
                raise ValueError(f"the direct lane declined a {verb} call")
            answer[2]()  # its bookkeeping, outside the timing
        source.apply("pods", "ADDED", bound)

    return Figures(
        size=size,
        nodes=source.node_count(),
        pods=pod_count,
        rss_start_mb=round(rss_start, 1),
        rss_synced_mb=round(rss_synced, 1),
        peak_mb=round(peak_mb(me), 1),
        first_sync_s=round(first_sync, 2),
        full_collection_ms=round(1000 * full_collection, 1),
        added_us=per_event["ADDED"],
        modified_us=per_event["MODIFIED"],
        deleted_us=per_event["DELETED"],
        churn_cpu_share=round(churn_cpu / (2 * CHURN) * 200, 4),
        rss_before_churn_mb=round(rss_before_churn, 1),
        rss_after_churn_mb=round(rss_after_churn, 1),
        filter_ms=round(1000 * statistics.median(seconds["filter"]), 3),
        prioritize_ms=round(1000 * statistics.median(seconds["prioritize"]), 3),
    )


def _nodes(source: Any, names: Sequence[str]) -> Iterator[Json]:
    for name in names:
        node = source.get_node(name)
        if node is not None:
            yield node


def _event(kind: str, pod: Json) -> bytes:
    return orjson.dumps({"type": kind, "object": pod})


def _restarted(pod: Json) -> Json:
    """The same pod, its container restarted once (a status update, a new version)."""
    changed = orjson.loads(orjson.dumps(pod))
    changed["metadata"]["resourceVersion"] += "1"
    changed["status"]["containerStatuses"][0]["restartCount"] = 1
    return changed


def _per_event_us(source: Any, lines: Sequence[bytes]) -> float:
    """CPU microseconds per event, each decoded (as the reflector does) and applied."""
    started = time.process_time()
    for line in lines:
        event = orjson.loads(line)
        source.apply("pods", event["type"], event["object"])
    return round(1e6 * (time.process_time() - started) / len(lines), 1)


# --- side by side with kube-scheduler, through the real API server (--live) ----------------


@dataclass
class LiveFigures:
    nodes: int
    pods: int
    create_nodes_per_s: float  # how fast the harness's API server took the nodes
    create_pods_per_s: float  # and the pods
    apiserver_rss_mb: float  # kube-apiserver and etcd once every object is in
    etcd_rss_mb: float
    scheduler_ready_s: float  # kube-scheduler started -> /readyz (its informers synced)
    scheduler_rss_mb: float
    policyext_ready_s: float  # policyext serve started -> /readyz (both watches listed)
    policyext_worker_rss_mb: float  # the serving worker (gunicorn's master apart)
    policyext_master_rss_mb: float
    filter_ms: float  # a 500-name filter over HTTP: median wall ms at the client
    filter_worker_cpu_ms: float  # the worker's CPU per call (and one pod event's)


# client connections that create the objects: each one kept alive (a TLS handshake per
# object, as the harness's KubeClient makes, was most of the client's and the server's work)
CREATORS: Final = 16
# filter calls over HTTP once policyext is ready, a pod bound between two (as live: no
# call is answered from the remembered reply of the one before)
LIVE_CALLS: Final = 300
# what the server answers a create with: protobuf is cheaper for it to write than JSON
# (the answer is only checked for its status)
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"


class _Creator:
    """POSTs of JSON bodies to the API server, on one kept-alive connection per thread."""

    def __init__(self, port: int, token: str, context: Any) -> None:
        self.port, self.token, self.context = port, token, context
        self.local = threading.local()

    def send(self, method: str, path: str, body: bytes, content_type: str) -> None:
        for attempt in range(3):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                connection = self.local.connection = http.client.HTTPSConnection(
                    "127.0.0.1", self.port, context=self.context, timeout=120
                )
            try:
                connection.request(
                    method,
                    path,
                    body=body,
                    headers={
                        "Authorization": f"Bearer {self.token}",
                        "Content-Type": content_type,
                        "Accept": f"{PROTOBUF}, application/json",
                    },
                )
                response = connection.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()  # the server closed a kept connection: a new one
                self.local.connection = None
                if attempt == 2:
                    raise
                continue
            if response.status == 429:  # too many requests in flight: again
                time.sleep(0.1)
                continue
            if not 200 <= response.status < 300:
                raise RuntimeError(f"{method} {path}: {response.status} {answer[:300]!r}")
            return
        raise RuntimeError(f"{method} {path}: refused three times")

    def create(self, path: str, manifest: Json) -> None:
        self.send("POST", path, orjson.dumps(manifest), "application/json")

    def node(self, manifest: Json) -> None:
        """A Node without the not-ready taint admission puts on it (as create_fake_node)."""
        self.create("/api/v1/nodes", manifest)
        patch = orjson.dumps({"spec": {"taints": manifest["spec"].get("taints", [])}})
        name = manifest["metadata"]["name"]
        self.send("PATCH", f"/api/v1/nodes/{name}", patch, "application/merge-patch+json")


def live(nodes: int, pods: int) -> LiveFigures:
    """The same Nodes and Pods in the e2e harness's API server; kube-scheduler and
    `policyext serve --kubeconfig` started on them one after the other (each alone on the
    machine's CPU while it lists), their time to ready and resident memory once ready;
    then policyext's 500-name filter over HTTP."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.e2e.binaries import ensure_binaries
    from tests.e2e.controlplane import ADMIN, POLICYEXT, ControlPlane, fake_node
    from tests.e2e.extender import Extender
    from tests.e2e.rbac import grant_extender_rbac, wait_until_granted

    with (
        tempfile.TemporaryDirectory(prefix="policyext-scale-live-") as work,
        ControlPlane(ensure_binaries(), Path(work)) as plane,
    ):
        admin = plane.client()
        grant_extender_rbac(admin)
        wait_until_granted(plane.client(POLICYEXT))
        names = [f"scale-{i:05d}" for i in range(nodes)]
        for namespace in sorted(set(TEAMS)):
            admin.create_namespace(namespace)
        creator = _Creator(plane.api_port, plane.identities[ADMIN].token, admin.context)

        def create_pods(first: int) -> None:
            # each thread its own share, made as it goes (150,000 manifests held at once
            # would be gigabytes of the client's memory)
            rng = random.Random(f"scale:live:{first}")
            for i in range(first, pods, CREATORS):
                made = _creatable(api_pod(rng, names[i % nodes], i))
                creator.create(f"/api/v1/namespaces/{made['metadata']['namespace']}/pods", made)

        with ThreadPoolExecutor(CREATORS) as pool:
            started = time.monotonic()
            list(pool.map(lambda n: creator.node(fake_node(n, cpu="64")), names))
            node_rate = nodes / (time.monotonic() - started)
            print(f"{nodes} nodes created ({node_rate:.0f} nodes/s)", flush=True)
            started = time.monotonic()
            list(pool.map(create_pods, range(CREATORS)))
            rate = pods / (time.monotonic() - started)
        print(f"{pods} pods created ({rate:.0f} pods/s)", flush=True)
        apiserver_rss, etcd_rss = (_rss_of(plane, n) for n in ("kube-apiserver", "etcd"))

        started = time.monotonic()
        scheduler = plane.start_scheduler(
            "profiles: [{schedulerName: scale}]", name="scale", timeout=1200
        )
        scheduler_ready = time.monotonic() - started
        assert scheduler.process is not None
        scheduler_rss = rss_mb(scheduler.process.pid)
        plane.stop_component("scale")
        print(f"kube-scheduler ready in {scheduler_ready:.1f} s", flush=True)

        kubeconfig = plane.write_kubeconfig(POLICYEXT, Path(work) / "policyext.kubeconfig")
        rules = Path(work) / "rules"
        rules.mkdir()
        (rules / "benchmark.json").write_text(json.dumps(policy_document()))
        extender = Extender(plane, kubeconfig, [rules], name="policyext-scale")
        started = time.monotonic()
        extender.start(timeout=1200)
        policyext_ready = time.monotonic() - started
        master = extender.component.process
        assert master is not None
        workers = Path(f"/proc/{master.pid}/task/{master.pid}/children").read_text().split()
        worker = max((int(w) for w in workers), key=rss_mb)
        worker_rss = rss_mb(worker)
        master_rss = rss_mb(master.pid)
        print(f"policyext ready in {policyext_ready:.1f} s", flush=True)
        filter_ms, filter_cpu_ms = _live_filter(extender.port, worker, names, creator, pods)
        extender.stop()
    return LiveFigures(
        nodes,
        pods,
        round(node_rate),
        round(rate),
        round(apiserver_rss, 1),
        round(etcd_rss, 1),
        round(scheduler_ready, 1),
        round(scheduler_rss, 1),
        round(policyext_ready, 1),
        round(worker_rss, 1),
        round(master_rss, 1),
        filter_ms,
        filter_cpu_ms,
    )


def _rss_of(plane: Any, name: str) -> float:
    process = plane.components[name].process
    return rss_mb(process.pid) if process is not None else 0.0


def _live_filter(
    port: int, worker: int, names: Sequence[str], creator: _Creator, first: int
) -> tuple[float, float]:
    """Median wall ms of LIVE_CALLS 500-name filter calls to policyext over HTTP (one kept
    connection), and the worker's CPU ms per call; a pod bound to one of the 500 nodes
    between two calls, as live (its watch event is in the worker's CPU figure)."""
    asked = sorted(random.Random("names:live").sample(list(names), min(NAMES, len(names))))
    body = orjson.dumps({"Pod": workload.benchmark_pod(), "Nodes": None, "NodeNames": asked})
    rng = random.Random("scale:live:binds")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    seconds = []
    ticks = _cpu_ticks(worker)
    for i in range(LIVE_CALLS):
        started = time.perf_counter()
        connection.request("POST", "/filter", body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        seconds.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"/filter answered {response.status}")
        bound = _creatable(api_pod(rng, rng.choice(asked), first + i))
        creator.create(f"/api/v1/namespaces/{bound['metadata']['namespace']}/pods", bound)
        time.sleep(0.05)  # its watch event reaches the worker before the next call
    cpu = (_cpu_ticks(worker) - ticks) / os.sysconf("SC_CLK_TCK")
    connection.close()
    return round(1000 * statistics.median(seconds), 3), round(1000 * cpu / LIVE_CALLS, 3)


def _cpu_ticks(pid: int) -> int:
    """User and system CPU of a process so far, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def policy_document() -> Json:
    from bench import policy

    return policy.scheduling_policy()


def _creatable(pod: Json) -> Json:
    """What a client may send for `pod`: no status, uid, version or managed fields (the
    API server sets them; bound at creation through spec.nodeName)."""
    meta = {
        k: v
        for k, v in pod["metadata"].items()
        if k not in ("uid", "resourceVersion", "creationTimestamp", "managedFields")
    }
    meta["ownerReferences"] = []  # no ReplicaSet exists to own it
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod["spec"]}


# --- the driver ----------------------------------------------------------------------------


def run(sizes: Sequence[tuple[str, int, int]]) -> list[Figures]:
    results = []
    for size, nodes, per_node in sizes:
        with tempfile.TemporaryDirectory(prefix="policyext-scale-") as tmp:
            folder = Path(tmp)
            write_cluster(folder, nodes, per_node)
            child = subprocess.run(
                [sys.executable, "-m", "bench.scale", "--child", str(folder), "--size", size],
                check=True,
                capture_output=True,
                text=True,
            )
        figures = Figures(**json.loads(child.stdout.strip().splitlines()[-1]))
        print(_row(figures), flush=True)
        results.append(figures)
    return results


HEADER: Final = (
    "| size | pods | RSS empty → synced (peak) | first sync (CPU) | full GC "
    "| ADDED / MODIFIED / DELETED "
    "| churn (100+100/s): CPU, RSS before → after | filter / prioritize (500 names) |\n"
    "|---|---|---|---|---|---|---|---|"
)


def _row(f: Figures) -> str:
    return (
        f"| {f.size} | {f.pods:,} | {f.rss_start_mb:.0f} → {f.rss_synced_mb:.0f} MB "
        f"({f.peak_mb:.0f}) | {f.first_sync_s:.1f} s | {f.full_collection_ms:.0f} ms | "
        f"{f.added_us:.0f} / {f.modified_us:.0f} / "
        f"{f.deleted_us:.0f} µs | {100 * f.churn_cpu_share:.1f} % of a core, "
        f"{f.rss_before_churn_mb:.0f} → {f.rss_after_churn_mb:.0f} MB | "
        f"{f.filter_ms:.2f} / {f.prioritize_ms:.2f} ms |"
    )


def _labels() -> list[str]:
    return [f"{nodes}x{per_node}" for _, nodes, per_node in SIZES]


def chosen(sizes: str) -> list[tuple[str, int, int]]:
    """The sizes `--sizes` names (see main); none when it names one that is not listed."""
    if sizes == "all":
        return list(SIZES)
    if sizes == "small":
        return list(SIZES[:1])
    by_label = dict(zip(_labels(), SIZES, strict=True))
    wanted = [by_label.get(label.strip()) for label in sizes.split(",")]
    return [size for size in wanted if size is not None] if None not in wanted else []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--output", type=Path, help="write the figures as JSON here")
    parser.add_argument(
        "--sizes",
        default="all",
        help="all (default), 'small' for today's sizes alone (a quick look), or some sizes "
        "as NODESxPODS_PER_NODE, comma-separated (500x5,5000x30: the filter's two ends)",
    )
    parser.add_argument(
        "--live",
        nargs=2,
        type=int,
        metavar=("NODES", "PODS"),
        help="instead: kube-scheduler and policyext side by side on NODES and PODS in the "
        "e2e harness's API server (its binaries are built on first use)",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(asdict(measure(args.child, args.size))))
        return 0
    if args.live is not None:
        figures = live(*args.live)
        print(json.dumps(asdict(figures)))
        if args.output is not None:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(asdict(figures), indent=2) + "\n")
        return 0
    sizes = chosen(args.sizes)
    if not sizes:
        parser.error(f"--sizes: none of {args.sizes!r} is a size of {', '.join(_labels())}")
    print(HEADER, flush=True)
    results = run(sizes)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
