"""A running server reloads its policy folder when it changes — including kubelet's atomic
swap of a mounted ConfigMap — and a rejected update changes nothing that is served."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.policies import BROKEN, rejecting
from tests.projection import project
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.metrics_scrape import Scrape

REQUEST = Path(__file__).resolve().parents[2] / "examples" / "filter-request.json"
NOT_DEDICATED = rejecting("a", "dedicated")  # refuses payments-b
NO_GPU = rejecting("b", "nvidia.com/gpu.present")  # refuses gpu-a
RELOAD_DEADLINE = 2.0


def rejected(server: ExtenderServer) -> set[str]:
    request: dict[str, Any] = json.loads(REQUEST.read_text())
    reply = server.post_json("/filter", request).json()
    return {n for n, m in (reply.get("FailedNodes") or {}).items() if "refused" in m}


def until(condition: Callable[[], bool], timeout: float = RELOAD_DEADLINE) -> float:
    """Seconds until `condition` held; fails the test after `timeout`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"not within {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.mark.parametrize("workers", [1, 2], ids=["one worker", "two workers"])
def test_a_projected_configmap_update_is_served_within_two_seconds_and_a_bad_one_never(
    serve: ServerFactory, tmp_path: Path, workers: int
) -> None:
    rules = project(tmp_path / "rules", {"policy.yaml": NOT_DEDICATED})
    server = serve("--workers", str(workers), rules=[rules])
    assert rejected(server) == {"payments-b"}
    first = server.get("/policies").json()["version"]

    project(rules, {"policy.yaml": NO_GPU})
    until(lambda: all(rejected(server) == {"gpu-a"} for _ in range(4 * workers)))
    second = server.get("/policies").json()
    assert second["version"] != first and second["lastReload"]["ok"] is True

    project(rules, {"policy.yaml": NO_GPU, "broken.yaml": BROKEN})
    # each worker reloads on its own: wait until every answer comes after the reload
    until(
        lambda: all(
            server.get("/policies").json()["lastReload"]["ok"] is False for _ in range(4 * workers)
        )
    )
    after = server.get("/policies").json()
    assert after["version"] == second["version"], "the last good set keeps serving"
    assert after["lastReload"]["errors"][0].startswith(f"{rules / 'broken.yaml'}:8:")
    for _ in range(4 * workers):
        assert rejected(server) == {"gpu-a"}
    ready = server.get("/readyz")
    assert ready.status == 200, "a bad update does not take the server out of service"
    assert ready.json()["checks"]["lastReload"]["ok"] is False

    metrics = Scrape(server.get("/metrics").body.decode())
    assert metrics.total("policyext_policy_reloads_total", {"result": "failed"}) >= workers
    assert metrics.value("policyext_policy_last_reload_success") == 0

    project(rules, {"policy.yaml": NOT_DEDICATED})
    until(
        lambda: all(server.get("/policies").json()["version"] == first for _ in range(4 * workers))
    )
    assert rejected(server) == {"payments-b"}
    metrics = Scrape(server.get("/metrics").body.decode())
    assert metrics.value("policyext_policy_last_reload_success") == 1
