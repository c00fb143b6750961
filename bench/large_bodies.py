"""`python -m bench.large_bodies`: a worker's memory over filter calls with a large pod.

Serves the example policies (`rules/`) on the demo cluster (`examples/cluster.yaml`, in
NodeNames mode) and sends `--requests` filter calls, one after another, whose pod carries
an annotation of `--annotation-mb` MiB (a valid request: the default --max-body is 64 MiB).
Prints the worker's resident memory before the first call, after each and at the end, as
JSON. A worker that keeps each body until the cycle collector runs grows by about a body
per call; one that frees a body when its call is over stays flat (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.server import rss_mb, serve
from bench.targets import REPO_ROOT

NODES = ["general-a", "general-b", "general-c", "gpu-a", "payments-b", "spot-c"]


def request_body(annotation_mb: float, index: int) -> bytes:
    size = int(annotation_mb * 1024 * 1024)
    pod = {
        "metadata": {
            "name": f"big-{index}",
            "namespace": "shop",
            "uid": f"uid-big-{index}",
            "annotations": {"example.com/blob": "x" * size},
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
    }
    return json.dumps({"Pod": pod, "NodeNames": NODES}).encode()


def measure(requests: int, annotation_mb: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with serve([REPO_ROOT / "rules"], REPO_ROOT / "examples" / "cluster.yaml", log) as running:
            (worker,) = running.worker_pids()
            start = rss_mb(worker)
            after: list[float] = []
            for i in range(requests):
                conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=120)
                try:
                    body = request_body(annotation_mb, i)
                    conn.request("POST", "/filter", body, {"Content-Type": "application/json"})
                    response = conn.getresponse()
                    response.read()
                    if response.status != 200:
                        raise RuntimeError(f"filter answered {response.status}")
                finally:
                    conn.close()
                after.append(round(rss_mb(worker), 1))
    return {
        "requests": requests,
        "annotation_mb": annotation_mb,
        "rss_mb": {"start": round(start, 1), "after_each": after, "max": max(after)},
        "growth_mb": round(after[-1] - start, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.large_bodies", description=__doc__)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--annotation-mb", type=float, default=60.0)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.requests, args.annotation_mb), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
