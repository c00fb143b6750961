"""Pending pods of many shapes: what the scheduler sends an extender in a busy cluster.

`benchmark_pod` in workload.py is one pod, sent again and again (the case a reply memo
answers). Here every pod is new: CPU from 100m to 4 cores written as people write it
("250m", "0.5", "2"), memory as "512Mi" or "1G", about a third `critical`, the
preferred-zone annotation present, absent or naming a zone without nodes, 10 % asking for
GPUs, some with an init container that needs more than the app, some with a RuntimeClass
overhead.

No two pods of one call share what the benchmark policy reads of them (effective CPU,
critical, GPU, preferred zone): a server cannot answer one from what it kept of another,
so every measured call is the cost of a pod never seen before. Everything is drawn from
one seeded `random.Random`: the same arguments give the same pods, byte for byte.
"""

from __future__ import annotations

import random
from typing import Final

from bench.policy import PodFacts, quantity_millis
from bench.workload import (
    DEFAULT_SEED,
    GPU_RESOURCE,
    NOW,
    PREFERRED_ZONE_ANNOTATION,
    TEAMS,
    ZONES,
    Json,
)

CRITICAL_SHARE: Final = 1 / 3
GPU_SHARE: Final = 0.10
INIT_SHARE: Final = 0.25
OVERHEAD_SHARE: Final = 0.10
# a zone no node is in: the score must be 0 everywhere, not an error
ZONE_WITHOUT_NODES: Final = "eu-west-1d"
ZONE_CHOICES: Final = (*ZONES, None, None, None, ZONE_WITHOUT_NODES)
MEMORY: Final = ("128Mi", "256Mi", "512Mi", "768Mi", "1Gi", "1G", "2Gi", "1500M", "4Gi")
MIN_CPU: Final = 100
MAX_CPU: Final = 4000


def cpu_text(rng: random.Random, millis: int) -> str:
    """Millicores written one of the ways people write them: "2", "0.5" or "250m"."""
    if millis % 1000 == 0 and rng.random() < 0.7:
        return str(millis // 1000)
    if millis % 100 == 0 and rng.random() < 0.6:
        return f"{millis / 1000:g}"
    return f"{millis}m"


def _cpu_millis(rng: random.Random) -> int:
    """A CPU request from 100m to 4 cores, small ones more often (log-uniform), rounded as
    people round: whole and half cores, tenths, or 10m steps."""
    raw = MIN_CPU * (MAX_CPU / MIN_CPU) ** rng.random()
    step = rng.choice((500, 100, 10, 10))
    return min(MAX_CPU, max(MIN_CPU, round(raw / step) * step))


def _container(name: str, image: str, cpu: str, memory: str, gpus: int = 0) -> Json:
    requests = {"cpu": cpu, "memory": memory}
    limits = {"memory": memory}
    if gpus:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(gpus)
    return {
        "name": name,
        "image": image,
        "resources": {
            "limits": dict(sorted(limits.items())),
            "requests": dict(sorted(requests.items())),
        },
        "imagePullPolicy": "IfNotPresent",
    }


def pending_pod(rng: random.Random, index: int) -> Json:
    """One pending pod of a random shape."""
    team = rng.choice(TEAMS)
    app = f"{team}-app-{index % 97}"
    suffix = f"{rng.getrandbits(40):010x}"
    labels = {"app.kubernetes.io/name": app}
    if rng.random() < CRITICAL_SHARE:
        labels["critical"] = "true"
    elif rng.random() < 0.2:
        labels["critical"] = "false"
    annotations: dict[str, str] = {}
    zone = rng.choice(ZONE_CHOICES)
    if zone is not None:
        annotations[PREFERRED_ZONE_ANNOTATION] = zone
    image = f"registry.example/{team}/{app}:v{rng.randint(1, 40)}"
    gpus = rng.choice((1, 1, 2, 4)) if rng.random() < GPU_SHARE else 0
    containers = [_container(app, image, cpu_text(rng, _cpu_millis(rng)), rng.choice(MEMORY), gpus)]
    for sidecar in range(rng.choice((0, 0, 1, 2))):
        cpu = cpu_text(rng, rng.choice((10, 20, 50, 100, 150, 200, 250)))
        containers.append(_container(f"sidecar-{sidecar}", "proxy:1.30", cpu, "64Mi"))
    spec: Json = {}
    if rng.random() < INIT_SHARE:
        init_cpu = cpu_text(rng, _cpu_millis(rng))
        spec["initContainers"] = [_container("init", image, init_cpu, rng.choice(MEMORY))]
    spec["containers"] = containers
    spec.update(
        restartPolicy="Always",
        schedulerName="policy-scheduler",
        priority=0,
        serviceAccountName=app,
    )
    if rng.random() < OVERHEAD_SHARE:
        spec["runtimeClassName"] = "kata"
        spec["overhead"] = {"cpu": rng.choice(("250m", "0.1", "500m")), "memory": "160Mi"}
    meta: Json = {
        "name": f"{app}-{suffix}",
        "namespace": team,
        "uid": f"00000000-0000-4000-8000-{rng.getrandbits(48):012x}",
        "creationTimestamp": NOW.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "labels": dict(sorted(labels.items())),
    }
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def pending_pods(count: int, seed: int = DEFAULT_SEED) -> list[Json]:
    """`count` pods, no two alike in what the benchmark policy reads of them."""
    rng = random.Random(f"pending:{seed}")
    seen: set[PodFacts] = set()
    pods: list[Json] = []
    for index in range(count):
        pod = pending_pod(rng, index)
        facts = PodFacts.of(pod)
        # a pod like an earlier one asks for 10m more (its shape, and so the shares, stay)
        while facts in seen:
            main = pod["spec"]["containers"][0]["resources"]["requests"]
            main["cpu"] = f"{quantity_millis(main['cpu']) + 10}m"
            facts = PodFacts.of(pod)
        seen.add(facts)
        pods.append(pod)
    return pods
