"""The benchmark workload: a seeded, realistic cluster and the pod being scheduled.

Nodes look like the ones an EKS cluster reports and the kube-scheduler forwards to an
extender (lowercase Kubernetes keys, no kind/apiVersion, no managedFields: the scheduler's
informers trim them). Keys are laid out in the order Go's encoding/json writes a v1.Node
(struct fields in declaration order, map keys sorted), so a Go extender that decodes and
re-encodes a node gives back the same bytes.

Everything is drawn from one `random.Random(seed)`: the same arguments always give the same
JSON, byte for byte, so figures from different runs and machines describe the same input.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

Json = dict[str, Any]

DEFAULT_SEED: Final = 20250601
REGION: Final = "eu-west-1"
ZONES: Final = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
TEAMS: Final = ("checkout", "payments", "search", "platform", "data")

# The pod being scheduled names the zone it prefers in this annotation (policy `preferred-zone`).
PREFERRED_ZONE_ANNOTATION: Final = "scheduling.policyext.io/preferred-zone"
PREFERRED_ZONE: Final = "eu-west-1b"
GPU_RESOURCE: Final = "nvidia.com/gpu"
GPU_LABEL: Final = "nvidia.com/gpu.present"
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"

# Exact shares of the nodes (rounded to whole nodes); they overlap at random.
SPOT_FRACTION: Final = 0.30
NOT_READY_FRACTION: Final = 0.03
GPU_FRACTION: Final = 0.05
CORDONED_FRACTION: Final = 0.02
SMALL_FRACTION: Final = 0.02

# The moment the snapshot describes: heartbeats are recent, creations are older.
NOW: Final = datetime(2025, 6, 2, 12, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class InstanceType:
    name: str
    family: str
    arch: str
    cores: int
    allocatable_cpu: str
    memory_ki: int  # capacity; allocatable subtracts the kubelet's reservation
    reserved_memory_ki: int
    max_pods: int
    gpus: int = 0


# Capacity and allocatable figures of the EKS-optimized AMI for these types.
GENERAL_TYPES: Final = (
    InstanceType("m5.large", "m5", "amd64", 2, "1930m", 7934440, 587776, 29),
    InstanceType("m5.xlarge", "m5", "amd64", 4, "3920m", 15919640, 909312, 58),
    InstanceType("m5.2xlarge", "m5", "amd64", 8, "7910m", 32129052, 1258496, 58),
    InstanceType("m5.4xlarge", "m5", "amd64", 16, "15890m", 65807716, 1258496, 110),
    InstanceType("c5.9xlarge", "c5", "amd64", 36, "35850m", 72169836, 2293760, 110),
    InstanceType("r5.8xlarge", "r5", "amd64", 32, "31850m", 261095456, 4063232, 110),
    InstanceType("m6g.2xlarge", "m6g", "arm64", 8, "7910m", 32247796, 1258496, 58),
    InstanceType("m6g.4xlarge", "m6g", "arm64", 16, "15890m", 65802300, 1258496, 110),
)
GENERAL_WEIGHTS: Final = (8, 20, 30, 20, 6, 4, 8, 4)
GPU_TYPES: Final = (
    InstanceType("g5.2xlarge", "g5", "amd64", 8, "7910m", 32329924, 1258496, 58, gpus=1),
    InstanceType("p3.8xlarge", "p3", "amd64", 32, "31850m", 251641036, 4063232, 110, gpus=4),
)
# Tiny edge nodes whose kubelet reserves half the core: too small for the benchmark pod.
SMALL_TYPE: Final = InstanceType("t3.edge", "t3", "amd64", 1, "500m", 1983840, 334848, 8)

# (registry path, tag, size in bytes); digests are derived from the name.
_ECR: Final = "602401143452.dkr.ecr.eu-west-1.amazonaws.com"
_APPS: Final = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
SYSTEM_IMAGES: Final = (
    (f"{_ECR}/amazon-k8s-cni", "v1.18.2-eksbuild.1", 44_837_217),
    (f"{_ECR}/amazon-k8s-cni-init", "v1.18.2-eksbuild.1", 59_219_423),
    (f"{_ECR}/eks/kube-proxy", "v1.30.0-minimal-eksbuild.3", 30_343_712),
    (f"{_ECR}/eks/pause", "3.5", 298_689),
    (f"{_ECR}/eks/aws-ebs-csi-driver", "v1.31.0", 31_512_994),
    ("quay.io/prometheus/node-exporter", "v1.8.1", 11_561_283),
)
APP_IMAGES: Final = (
    (f"{_APPS}/shop/checkout", "2025.05.28-1a2b3c4", 182_421_992),
    (f"{_APPS}/shop/cart", "2025.05.30-9f8e7d6", 97_214_530),
    (f"{_APPS}/shop/catalog", "2025.05.21-5c6d7e8", 143_771_021),
    (f"{_APPS}/payments/ledger", "v3.14.2", 221_094_117),
    (f"{_APPS}/payments/gateway", "v3.14.2", 88_120_604),
    (f"{_APPS}/search/indexer", "r1842", 512_880_113),
    (f"{_APPS}/search/query", "r1842", 301_002_774),
    (f"{_APPS}/data/spark-executor", "3.5.1-hadoop3", 1_021_774_311),
    (f"{_APPS}/data/airflow-worker", "2.9.1-python3.11", 735_401_882),
    (f"{_APPS}/platform/ingress-nginx", "v1.10.1", 112_943_102),
    ("docker.io/envoyproxy/envoy", "v1.30.2", 62_813_476),
    ("docker.io/library/redis", "7.2.5-alpine", 16_251_877),
    ("docker.io/library/nginx", "1.27.0", 71_002_130),
    ("docker.io/bitnami/kafka", "3.7.0-debian-12-r6", 298_118_553),
    ("quay.io/jetstack/cert-manager-controller", "v1.14.5", 18_220_014),
    ("registry.k8s.io/metrics-server/metrics-server", "v0.7.1", 19_871_043),
    ("docker.io/grafana/promtail", "3.0.0", 84_119_306),
    ("docker.io/otel/opentelemetry-collector-contrib", "0.102.1", 98_402_551),
)
NVIDIA_IMAGE: Final = ("nvcr.io/nvidia/k8s-device-plugin", "v0.15.0", 121_114_301)


@dataclass(frozen=True)
class Workload:
    """A cluster (nodes and the pods bound to them) and the pod to schedule."""

    seed: int
    nodes: list[Json]  # as the scheduler sends them in ExtenderArgs.Nodes.items
    pods: list[Json]  # bound to the nodes, for node information (requested resources)
    pod: Json  # the pod being scheduled

    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]


def generate(node_count: int = 500, seed: int = DEFAULT_SEED) -> Workload:
    """Build the workload of `node_count` nodes; the same arguments give the same workload."""
    rng = random.Random(f"{seed}:{node_count}")
    roles = _node_roles(rng, node_count)
    nodes = [_node(rng, i, roles) for i in range(node_count)]
    pods: list[Json] = []
    for node in nodes:
        pods.extend(_bound_pods(rng, node))
    return Workload(seed, nodes, pods, benchmark_pod(random.Random(seed)))


def encode(obj: object) -> bytes:
    """Compact JSON, as Go's encoding/json writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def full_args(workload: Workload) -> Json:
    """ExtenderArgs for an extender with nodeCacheCapable: false (the whole NodeList)."""
    return {
        "Pod": workload.pod,
        "Nodes": {"metadata": {}, "items": workload.nodes},
        "NodeNames": None,
    }


def names_args(workload: Workload) -> Json:
    """ExtenderArgs for an extender with nodeCacheCapable: true (node names only)."""
    return {"Pod": workload.pod, "Nodes": None, "NodeNames": workload.node_names()}


def snapshot(workload: Workload) -> Json:
    """The cluster as a v1 List, like `kubectl get nodes,pods -A -o json` prints it."""
    items = [{"apiVersion": "v1", "kind": "Node", **n} for n in workload.nodes]
    items += [{"apiVersion": "v1", "kind": "Pod", **p} for p in workload.pods]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def write_snapshot(workload: Workload, path: Path) -> Path:
    """Write the snapshot as JSON (which YAML loaders read as well) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(snapshot(workload)))
    return path


# --- nodes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Roles:
    spot: frozenset[int]
    not_ready: frozenset[int]
    cordoned: frozenset[int]
    gpu: frozenset[int]
    small: frozenset[int]
    ips: list[int]


def _count(fraction: float, total: int) -> int:
    return round(fraction * total)


def _node_roles(rng: random.Random, n: int) -> _Roles:
    order = rng.sample(range(n), n)
    gpu_count, small_count = _count(GPU_FRACTION, n), _count(SMALL_FRACTION, n)
    return _Roles(
        spot=frozenset(rng.sample(range(n), _count(SPOT_FRACTION, n))),
        not_ready=frozenset(rng.sample(range(n), _count(NOT_READY_FRACTION, n))),
        cordoned=frozenset(rng.sample(range(n), _count(CORDONED_FRACTION, n))),
        gpu=frozenset(order[:gpu_count]),
        small=frozenset(order[gpu_count : gpu_count + small_count]),
        # host parts of 10.16.0.0/14, distinct for every node
        ips=rng.sample(range(256, 2**18 - 256), n),
    )


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(4 * digits):0{digits}x}"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _instance_type(rng: random.Random, i: int, roles: _Roles) -> InstanceType:
    if i in roles.gpu:
        return rng.choices(GPU_TYPES, weights=(4, 1))[0]
    if i in roles.small:
        return SMALL_TYPE
    return rng.choices(GENERAL_TYPES, weights=GENERAL_WEIGHTS)[0]


def _node(rng: random.Random, i: int, roles: _Roles) -> Json:
    itype = _instance_type(rng, i, roles)
    zone = rng.choice(ZONES)
    host_part = roles.ips[i]
    ip = f"10.{16 + (host_part >> 16)}.{(host_part >> 8) & 255}.{host_part & 255}"
    name = f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"
    instance_id = "i-0" + _hex(rng, 16)
    created = NOW - timedelta(days=rng.randint(1, 60), seconds=rng.randint(0, 86399))
    team = "data" if i in roles.gpu else rng.choice(TEAMS)
    if i in roles.gpu:
        pool = f"gpu-{itype.family}"
    elif i in roles.small:
        pool = "edge"
    else:
        pool = f"{team}-{itype.family}"
    labels = {
        "beta.kubernetes.io/arch": itype.arch,
        "beta.kubernetes.io/instance-type": itype.name,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": REGION,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "kubernetes.io/arch": itype.arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "lifecycle": "spot" if i in roles.spot else "on-demand",
        "node-role.kubernetes.io/worker": "",
        "node.kubernetes.io/instance-type": itype.name,
        "pool": pool,
        "team": team,
        "topology.kubernetes.io/region": REGION,
        "topology.kubernetes.io/zone": zone,
    }
    if itype.gpus:
        labels[GPU_LABEL] = "true"
    annotations = {
        "alpha.kubernetes.io/provided-node-ip": ip,
        "csi.volume.kubernetes.io/nodeid": json.dumps(
            {"ebs.csi.aws.com": instance_id}, separators=(",", ":")
        ),
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    metadata = {
        "name": name,
        "uid": _uuid(rng),
        "resourceVersion": str(rng.randint(10_000_000, 99_999_999)),
        "creationTimestamp": _time(created),
        "labels": dict(sorted(labels.items())),
        "annotations": annotations,
    }
    pod_cidr = f"100.{64 + i // 256}.{i % 256}.0/24"
    spec: Json = {
        "podCIDR": pod_cidr,
        "podCIDRs": [pod_cidr],
        "providerID": f"aws:///{zone}/{instance_id}",
    }
    taints: list[Json] = []
    if i in roles.cordoned:
        spec["unschedulable"] = True
        taints.append(
            {
                "key": UNSCHEDULABLE_TAINT,
                "effect": "NoSchedule",
                "timeAdded": _time(NOW - timedelta(minutes=rng.randint(5, 600))),
            }
        )
    if itype.gpus:
        taints.append({"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    return {
        "metadata": metadata,
        "spec": spec,
        "status": _node_status(rng, i, itype, name, ip, created, roles),
    }


def _node_status(
    rng: random.Random,
    i: int,
    itype: InstanceType,
    name: str,
    ip: str,
    created: datetime,
    roles: _Roles,
) -> Json:
    capacity = {
        "cpu": str(itype.cores),
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{itype.memory_ki}Ki",
        "pods": str(itype.max_pods),
    }
    allocatable = {
        **capacity,
        "cpu": itype.allocatable_cpu,
        "ephemeral-storage": "95551679124",
        "memory": f"{itype.memory_ki - itype.reserved_memory_ki}Ki",
    }
    if itype.gpus:
        capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(itype.gpus)
    # map keys in Go's order (sorted), so a decode/encode round trip keeps the bytes
    capacity = dict(sorted(capacity.items()))
    heartbeat = _time(NOW - timedelta(seconds=rng.randint(1, 40)))
    booted = _time(created + timedelta(seconds=rng.randint(20, 90)))
    conditions = [
        _condition("MemoryPressure", "KubeletHasSufficientMemory", "memory", heartbeat, booted),
        _condition("DiskPressure", "KubeletHasNoDiskPressure", "disk", heartbeat, booted),
        _condition("PIDPressure", "KubeletHasSufficientPID", "PID", heartbeat, booted),
        _ready_condition(rng, i in roles.not_ready, heartbeat, booted),
    ]
    version = "v1.30.0-eks-036c24b"
    arch_suffix = "aarch64" if itype.arch == "arm64" else "x86_64"
    node_info = {
        "machineID": _hex(rng, 32),
        "systemUUID": "ec2" + _hex(rng, 5) + "-" + _uuid(rng)[9:],
        "bootID": _uuid(rng),
        "kernelVersion": f"5.10.217-205.860.amzn2.{arch_suffix}",
        "osImage": "Amazon Linux 2",
        "containerRuntimeVersion": "containerd://1.7.11",
        "kubeletVersion": version,
        "kubeProxyVersion": version,
        "operatingSystem": "linux",
        "architecture": itype.arch,
    }
    return {
        "capacity": capacity,
        "allocatable": dict(sorted(allocatable.items())),
        "conditions": conditions,
        "addresses": [
            {"type": "InternalIP", "address": ip},
            {"type": "InternalDNS", "address": name},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": node_info,
        "images": _images(rng, itype),
    }


def _condition(kind: str, reason: str, what: str, heartbeat: str, since: str) -> Json:
    return {
        "type": kind,
        "status": "False",
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": since,
        "reason": reason,
        "message": "kubelet has no disk pressure"
        if what == "disk"
        else f"kubelet has sufficient {what} available",
    }


def _ready_condition(rng: random.Random, broken: bool, heartbeat: str, since: str) -> Json:
    if not broken:
        status, reason, message = "True", "KubeletReady", "kubelet is posting ready status"
    elif rng.random() < 0.5:
        status, reason = "Unknown", "NodeStatusUnknown"
        message = "Kubelet stopped posting node status."
    else:
        status, reason = "False", "KubeletNotReady"
        message = (
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"
        )
    return {
        "type": "Ready",
        "status": status,
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def _image(repo: str, tag: str, size: int) -> Json:
    digest = hashlib.sha256(f"{repo}:{tag}".encode()).hexdigest()
    return {"names": [f"{repo}@sha256:{digest}", f"{repo}:{tag}"], "sizeBytes": size}


def _images(rng: random.Random, itype: InstanceType) -> list[Json]:
    chosen = list(SYSTEM_IMAGES)
    if itype.gpus:
        chosen.append(NVIDIA_IMAGE)
    # 8 to 20 images, most nodes near the low end (long-lived nodes collect more)
    total = int(rng.triangular(8, 21, 8))
    chosen += rng.sample(APP_IMAGES, min(total, 20) - len(chosen))
    # the kubelet reports images largest first
    return [_image(*image) for image in sorted(chosen, key=lambda im: -im[2])]


# --- pods ----------------------------------------------------------------------------------

_DAEMONSETS: Final = (
    ("kube-system", "aws-node", SYSTEM_IMAGES[0], "25m", "40Mi"),
    ("kube-system", "kube-proxy", SYSTEM_IMAGES[2], "100m", "64Mi"),
    ("kube-system", "ebs-csi-node", SYSTEM_IMAGES[4], "30m", "120Mi"),
)


def _pod(
    rng: random.Random,
    namespace: str,
    app: str,
    image: tuple[str, str, int],
    cpu: str,
    memory: str,
    node_name: str,
    owner_kind: str,
    phase: str = "Running",
    init_cpu: str | None = None,
    overhead_cpu: str | None = None,
) -> Json:
    suffix = _hex(rng, 5)
    owner = f"{app}-{_hex(rng, 9)}" if owner_kind == "ReplicaSet" else app
    labels = {"app.kubernetes.io/name": app}
    if owner_kind == "ReplicaSet":
        labels["pod-template-hash"] = owner.rsplit("-", 1)[1]
    else:
        labels["controller-revision-hash"] = _hex(rng, 10)
    repo, tag, _ = image
    return {
        "metadata": {
            "name": f"{owner}-{suffix}",
            "generateName": f"{owner}-",
            "namespace": namespace,
            "uid": _uuid(rng),
            "resourceVersion": str(rng.randint(10_000_000, 99_999_999)),
            "creationTimestamp": _time(NOW - timedelta(hours=rng.randint(1, 700))),
            "labels": dict(sorted(labels.items())),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner_kind,
                    "name": owner,
                    "uid": _uuid(rng),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": _bound_spec(app, f"{repo}:{tag}", cpu, memory, node_name, init_cpu, overhead_cpu),
        "status": {
            "phase": phase,
            "hostIP": node_name.split(".", maxsplit=1)[0][3:].replace("-", "."),
            "qosClass": "Burstable",
        },
    }


def _bound_spec(
    app: str,
    image: str,
    cpu: str,
    memory: str,
    node_name: str,
    init_cpu: str | None,
    overhead_cpu: str | None,
) -> Json:
    spec: Json = {}
    if init_cpu is not None:
        # a migration step that needs more CPU than the app while it runs: it sets the
        # pod's effective request (max(sum of containers, largest init container))
        spec["initContainers"] = [
            {
                "name": "migrate",
                "image": image,
                "resources": {"requests": {"cpu": init_cpu, "memory": memory}},
            }
        ]
    spec["containers"] = [
        {
            "name": app,
            "image": image,
            "resources": {"requests": {"cpu": cpu, "memory": memory}},
            "imagePullPolicy": "IfNotPresent",
        }
    ]
    spec.update(
        restartPolicy="Always",
        serviceAccountName=app,
        nodeName=node_name,
        schedulerName="default-scheduler",
        priority=0,
    )
    if overhead_cpu is not None:
        # a sandboxed RuntimeClass: its overhead counts on top of the containers
        spec["runtimeClassName"] = "kata"
        spec["overhead"] = {"cpu": overhead_cpu, "memory": "160Mi"}
    return spec


def _bound_pods(rng: random.Random, node: Json) -> list[Json]:
    name = node["metadata"]["name"]
    pods = [
        _pod(rng, ns, app, im, cpu, mem, name, "DaemonSet") for ns, app, im, cpu, mem in _DAEMONSETS
    ]
    alloc_milli = _cpu_millis(node["status"]["allocatable"]["cpu"])
    budget = int(alloc_milli * rng.uniform(0.2, 0.75)) - 155  # what the daemonsets left
    for _ in range(rng.randint(0, 5)):
        cpu = rng.choice((100, 250, 500, 1000, 2000))
        init = cpu * 2 if rng.random() < 0.2 else None
        overhead = 250 if rng.random() < 0.1 else None
        effective = max(cpu, init or 0) + (overhead or 0)
        if effective > budget:
            break
        budget -= effective
        pods.append(_app_pod(rng, name, cpu, "Running", init_cpu=init, overhead_cpu=overhead))
    # finished Job pods: still bound to the node, but no longer using it (never counted)
    while rng.random() < 0.3:
        phase = rng.choice(("Succeeded", "Failed"))
        pods.append(_app_pod(rng, name, rng.choice((500, 1000, 4000)), phase))
    return pods


def _app_pod(
    rng: random.Random,
    node_name: str,
    cpu: int,
    phase: str,
    init_cpu: int | None = None,
    overhead_cpu: int | None = None,
) -> Json:
    team = rng.choice(TEAMS)
    image = rng.choice(APP_IMAGES)
    app = image[0].rsplit("/", 1)[1]
    return _pod(
        rng,
        team,
        app,
        image,
        f"{cpu}m",
        f"{cpu * 2}Mi",
        node_name,
        "ReplicaSet",
        phase,
        init_cpu=None if init_cpu is None else f"{init_cpu}m",
        overhead_cpu=None if overhead_cpu is None else f"{overhead_cpu}m",
    )


def _cpu_millis(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(value) * 1000


# --- the pod being scheduled ---------------------------------------------------------------


def benchmark_pod(
    rng: random.Random | None = None, *, critical: bool = True, gpus: int = 0
) -> Json:
    """The pod to schedule, as the scheduler sends it: two containers (500m + 100m CPU),
    labelled `critical: "true"`, preferring zone `PREFERRED_ZONE`."""
    rng = rng or random.Random(DEFAULT_SEED)
    owner = "checkout-7d9f8b6c5"
    labels = {"app.kubernetes.io/name": "checkout", "pod-template-hash": "7d9f8b6c5"}
    if critical:
        labels["critical"] = "true"
    app_requests = {"cpu": "500m", "memory": "512Mi"}
    app_limits = {"memory": "1Gi"}
    if gpus:
        app_requests[GPU_RESOURCE] = app_limits[GPU_RESOURCE] = str(gpus)
    return {
        "metadata": {
            "name": f"{owner}-x2x4k",
            "generateName": f"{owner}-",
            "namespace": "checkout",
            "uid": _uuid(rng),
            "resourceVersion": "48151623",
            "creationTimestamp": _time(NOW),
            "labels": dict(sorted(labels.items())),
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2025-06-01T09:30:00Z",
                PREFERRED_ZONE_ANNOTATION: PREFERRED_ZONE,
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": owner,
                    "uid": _uuid(rng),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": "kube-api-access-7xk2p",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                }
            ],
            "containers": [
                {
                    "name": "checkout",
                    "image": f"{APP_IMAGES[0][0]}:{APP_IMAGES[0][1]}",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                    "resources": {
                        "limits": dict(sorted(app_limits.items())),
                        "requests": dict(sorted(app_requests.items())),
                    },
                    "imagePullPolicy": "IfNotPresent",
                },
                {
                    "name": "envoy",
                    "image": "docker.io/envoyproxy/envoy:v1.30.2",
                    "resources": {
                        "limits": {"memory": "256Mi"},
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                    },
                    "imagePullPolicy": "IfNotPresent",
                },
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "checkout",
            "securityContext": {},
            "schedulerName": "policy-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
