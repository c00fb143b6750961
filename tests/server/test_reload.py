"""A running server reloads its policy folder when it changes — including kubelet's atomic
swap of a mounted ConfigMap — and a rejected update changes nothing that is served."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.policies import BROKEN, rejecting
from tests.projection import project
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.metrics_scrape import Scrape
from tests.waiting import eventually

REQUEST = Path(__file__).resolve().parents[2] / "examples" / "filter-request.json"
NOT_DEDICATED = rejecting("a", "dedicated")  # refuses payments-b
NO_GPU = rejecting("b", "nvidia.com/gpu.present")  # refuses gpu-a


def rejected(server: ExtenderServer) -> set[str]:
    request: dict[str, Any] = json.loads(REQUEST.read_text())
    reply = server.post_json("/filter", request).json()
    return {n for n, m in (reply.get("FailedNodes") or {}).items() if "refused" in m}


class WorkerLog:
    """What each worker (by pid) logged about its policies since `mark()`: every worker
    polls and reloads on its own, so agreeing replies do not show that all of them did."""

    def __init__(self, server: ExtenderServer) -> None:
        self.server = server
        self.start = 0

    def mark(self) -> None:
        self.start = len(self.server.stderr_text())

    def serving(self) -> dict[str, str]:
        """pid -> the version it last said it serves."""
        return self._last(r"\[(\d+)\] INFO policyext: serving policy version (\w+) from")

    def rejected(self) -> dict[str, str]:
        """pid -> the version it kept serving when it last refused an update."""
        return self._last(r"\[(\d+)\] ERROR policyext: policies from .* rejected; version (\w+)")

    def _last(self, pattern: str) -> dict[str, str]:
        text = self.server.stderr_text()[self.start :]
        return {m.group(1): m.group(2) for m in re.finditer(pattern, text)}


@pytest.mark.parametrize("workers", [1, 2], ids=["one worker", "two workers"])
def test_a_projected_configmap_update_is_served_by_every_worker_and_a_bad_one_never(
    serve: ServerFactory, tmp_path: Path, workers: int
) -> None:
    rules = project(tmp_path / "rules", {"policy.yaml": NOT_DEDICATED})
    server = serve("--workers", str(workers), rules=[rules])
    log = WorkerLog(server)
    # every worker has loaded the first set before the update: a worker still starting
    # would otherwise log its first load after the mark, as if it were the update's
    eventually(lambda: len(log.serving()) == workers)
    assert rejected(server) == {"payments-b"}
    first = server.get("/policies").json()["version"]

    log.mark()
    project(rules, {"policy.yaml": NO_GPU})
    # every worker, not just the ones that happened to answer: a worker that has not
    # loaded this version when the broken one comes keeps serving the first set
    eventually(lambda: len(log.serving()) == workers)
    assert first not in log.serving().values()
    assert all(rejected(server) == {"gpu-a"} for _ in range(4 * workers))
    second = server.get("/policies").json()
    assert second["version"] != first and second["lastReload"]["ok"] is True
    assert set(log.serving().values()) == {second["version"]}

    log.mark()
    project(rules, {"policy.yaml": NO_GPU, "broken.yaml": BROKEN})
    eventually(lambda: len(log.rejected()) == workers)
    assert set(log.rejected().values()) == {second["version"]}, "each kept the last good set"
    after = server.get("/policies").json()
    assert after["version"] == second["version"], "the last good set keeps serving"
    assert after["lastReload"]["errors"][0].startswith(f"{rules / 'broken.yaml'}:8:")
    for _ in range(4 * workers):
        assert rejected(server) == {"gpu-a"}
    ready = server.get("/readyz")
    assert ready.status == 200, "a bad update does not take the server out of service"
    # the category only: the errors are on /policies (introspection), not for any caller
    assert ready.json()["checks"]["lastReload"] == "failed"
    assert "broken.yaml" not in ready.body.decode()

    metrics = Scrape(server.get("/metrics").body.decode())
    assert metrics.total("policyext_policy_reloads_total", {"result": "failed"}) >= workers
    assert metrics.value("policyext_policy_last_reload_success") == 0

    log.mark()
    project(rules, {"policy.yaml": NOT_DEDICATED})
    eventually(lambda: len(log.serving()) == workers)
    assert set(log.serving().values()) == {first}
    for _ in range(4 * workers):
        assert rejected(server) == {"payments-b"}
    metrics = Scrape(server.get("/metrics").body.decode())
    assert metrics.value("policyext_policy_last_reload_success") == 1
