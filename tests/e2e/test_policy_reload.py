"""Policies from a ConfigMap, end to end: kube-scheduler places pods by the rules the
ConfigMap holds, an update changes where new pods go without a restart, an invalid update
keeps the old rules and leaves one Event on the ConfigMap, and a deleted ConfigMap keeps the
last good rules. The extender runs with two workers, as the `policyext` identity limited to
the RBAC the Helm chart grants (the ConfigMap by name only)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.policies import BROKEN
from tests.e2e.controlplane import (
    POLICYEXT,
    ApiError,
    Component,
    ControlPlane,
    KubeClient,
    fake_node,
    free_port,
    pod,
)
from tests.e2e.extender import policyext_argv, scheduler_config
from tests.e2e.rbac import grant_configmap_access
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

SCHEDULER_NAME = "reload-scheduler"
TEAM = "policyext.test/team"
WORKERS = 2


def only_team(team: str) -> str:
    return f"""\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: team-nodes
spec:
  filters:
    - name: team-{team}-only
      expression: "node.metadata.?labels[?'{TEAM}'].orValue('') == '{team}'"
      message: "only {team} nodes take pods now"
"""


def _get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=PATIENCE) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
    except OSError:
        return 0, None


@dataclass
class Setup:
    url: str
    namespace: str  # where the ConfigMap and the test pods live
    configmap: str
    admin: KubeClient

    @property
    def configmap_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps/{self.configmap}"

    def write_policies(self, files: dict[str, str]) -> float:
        """Replace the ConfigMap's data (creating it if needed); returns when it was done."""
        body = {"metadata": {"name": self.configmap}, "data": files}
        try:
            self.admin.request("PUT", self.configmap_path, body)
        except ApiError as e:
            if e.status != 404:
                raise
            self.admin.create(f"/api/v1/namespaces/{self.namespace}/configmaps", body)
        return time.monotonic()

    def every_worker(self, check: Callable[[dict[str, Any]], bool]) -> bool:
        """`check` holds for /policies as several answers in a row give it (with two
        workers, each answers some of them)."""
        for _ in range(4 * WORKERS):
            status, body = _get_json(f"{self.url}/policies")
            if status != 200 or not check(body):
                return False
        return True

    def place(self, name: str) -> str:
        """Create a pod for our scheduler and return the node it is bound to."""
        self.admin.create(
            f"/api/v1/namespaces/{self.namespace}/pods", pod(name, scheduler_name=SCHEDULER_NAME)
        )
        seen = self.admin.wait_for(
            f"/api/v1/namespaces/{self.namespace}/pods/{name}",
            lambda p: bool(p["spec"].get("nodeName")),
        )
        return str(seen["spec"]["nodeName"])

    def events(self, reason: str) -> list[dict[str, Any]]:
        found = self.admin.get(
            f"/api/v1/namespaces/{self.namespace}/events",
            fieldSelector=f"involvedObject.name={self.configmap},reason={reason}",
        )
        return list(found["items"])


@pytest.fixture(scope="module")
def setup(control_plane: ControlPlane, policyext_kubeconfig: Path) -> Iterator[Setup]:
    admin = control_plane.client()
    namespace = f"reload-{uuid.uuid4().hex[:6]}"
    admin.create_namespace(namespace)
    configmap = "policyext-policies"
    grant_configmap_access(admin, namespace, configmap)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    state = Setup(url, namespace, configmap, admin)
    state.write_policies({"team.yaml": only_team("blue")})
    server = Component(
        "policyext-reload",
        policyext_argv(
            "serve",
            "--kubeconfig",
            str(policyext_kubeconfig),
            "--rules-configmap",
            f"{namespace}/{configmap}",
            "--workers",
            str(WORKERS),
            "--bind",
            f"127.0.0.1:{port}",
            "--bind-verb",
            "--scheduler-name",
            SCHEDULER_NAME,
        ),
        control_plane.logdir / "policyext-reload.log",
    )
    server.start()
    try:
        server.wait_ready(lambda: _get_json(f"{url}/readyz")[0] == 200, timeout=PATIENCE)
        control_plane.start_scheduler(scheduler_config(url, SCHEDULER_NAME), name=SCHEDULER_NAME)
        yield state
    finally:
        if SCHEDULER_NAME in control_plane.components:
            control_plane.stop_component(SCHEDULER_NAME)
        server.stop()
        admin.request(
            "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": "0"}
        )


@pytest.fixture
def teams(admin: KubeClient) -> dict[str, str]:
    """A red node (roomier: the scheduler's own scores prefer it) and a blue one."""
    suffix = uuid.uuid4().hex[:6]
    names = {"red": f"red-{suffix}", "blue": f"blue-{suffix}"}
    admin.create_fake_node(fake_node(names["red"], cpu="32", memory="64Gi", labels={TEAM: "red"}))
    admin.create_fake_node(fake_node(names["blue"], cpu="2", memory="4Gi", labels={TEAM: "blue"}))
    return names


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_a_configmap_update_changes_where_new_pods_go(setup: Setup, teams: dict[str, str]) -> None:
    setup.write_policies({"team.yaml": only_team("blue")})
    eventually(lambda: setup.every_worker(lambda p: p["lastReload"]["ok"]))
    assert setup.place(_unique("before")) == teams["blue"]
    before = _get_json(f"{setup.url}/policies")[1]["version"]

    setup.write_policies({"team.yaml": only_team("red")})
    eventually(lambda: setup.every_worker(lambda p: p["version"] != before))
    assert setup.place(_unique("after")) == teams["red"]
    applied = eventually(lambda: setup.events("PolicyApplied"))
    assert any("is now served" in e["message"] for e in applied)


def test_an_invalid_update_keeps_the_old_rules_and_leaves_one_event_on_the_configmap(
    setup: Setup, teams: dict[str, str]
) -> None:
    setup.write_policies({"team.yaml": only_team("red")})
    eventually(lambda: setup.every_worker(lambda p: p["lastReload"]["ok"]))
    good = _get_json(f"{setup.url}/policies")[1]["version"]

    setup.write_policies({"team.yaml": only_team("blue"), "broken.yaml": BROKEN})
    eventually(lambda: setup.every_worker(lambda p: p["lastReload"]["ok"] is False))
    assert setup.every_worker(lambda p: p["version"] == good)
    rejected = eventually(lambda: setup.events("PolicyRejected"))
    where = f"configmap/{setup.namespace}/{setup.configmap}/broken.yaml:8:"
    mine = [e for e in rejected if where in e["message"]]
    assert len(mine) == 1, "two workers, one Event"
    assert mine[0]["type"] == "Warning"
    assert mine[0]["involvedObject"]["kind"] == "ConfigMap"
    assert setup.place(_unique("still-red")) == teams["red"], "the old rules keep deciding"
    status, ready = _get_json(f"{setup.url}/readyz")
    assert status == 200 and ready["checks"]["lastReload"] == "failed"


def test_a_deleted_configmap_keeps_the_last_good_rules_and_a_recreated_one_is_loaded(
    setup: Setup, teams: dict[str, str]
) -> None:
    setup.write_policies({"team.yaml": only_team("blue")})
    eventually(lambda: setup.every_worker(lambda p: p["lastReload"]["ok"]))
    setup.admin.delete(setup.configmap_path)
    eventually(
        lambda: setup.every_worker(lambda p: "was deleted" in " ".join(p["lastReload"]["errors"]))
    )
    assert setup.place(_unique("orphaned")) == teams["blue"]

    setup.write_policies({"team.yaml": only_team("red")})
    eventually(lambda: setup.every_worker(lambda p: p["lastReload"]["ok"]))
    assert setup.place(_unique("recreated")) == teams["red"]


def test_the_extender_identity_reads_its_configmap_and_no_other(
    control_plane: ControlPlane, setup: Setup
) -> None:
    extender = control_plane.client(POLICYEXT)
    assert extender.get(setup.configmap_path)["metadata"]["name"] == setup.configmap
    setup.admin.create(
        f"/api/v1/namespaces/{setup.namespace}/configmaps",
        {"metadata": {"name": _unique("other")}, "data": {"x": "y"}},
    )
    with pytest.raises(ApiError) as refused:
        extender.get(f"/api/v1/namespaces/{setup.namespace}/configmaps")
    assert refused.value.status == 403
    with pytest.raises(ApiError) as refused:
        extender.get(f"/api/v1/namespaces/{setup.namespace}/secrets")
    assert refused.value.status == 403


def test_an_extender_that_cannot_read_its_configmap_serves_nothing_and_says_why(
    control_plane: ControlPlane, setup: Setup, policyext_kubeconfig: Path
) -> None:
    """A ConfigMap outside the identity's RBAC: not ready, the reason in /readyz, and an
    Error for the scheduler instead of every node let through."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = Component(
        "policyext-forbidden",
        policyext_argv(
            "serve",
            "--kubeconfig",
            str(policyext_kubeconfig),
            "--rules-configmap",
            f"{setup.namespace}/not-ours",
            "--bind",
            f"127.0.0.1:{port}",
        ),
        control_plane.logdir / "policyext-forbidden.log",
    )
    server.start()
    try:

        def not_ready_with_a_reason() -> dict[str, Any] | None:
            status, body = _get_json(f"{url}/readyz")
            reason = status == 503 and (body or {}).get("checks", {}).get("lastReload")
            return body if reason else None

        detail = eventually(not_ready_with_a_reason)
        assert detail["checks"]["policies"] == "not loaded"
        assert detail["checks"]["lastReload"] == "failed"
        assert "ConfigMap" not in json.dumps(detail), "the reason is not for any caller"
        # the reason itself on /policies (introspection), not for any caller of /readyz
        [error] = _get_json(f"{url}/policies")[1]["lastReload"]["errors"]
        assert error == f"cannot read ConfigMap {setup.namespace}/not-ours: HTTP 403 Forbidden"
        request = json.dumps({"Pod": pod("p"), "NodeNames": ["any-node"], "Nodes": None}).encode()
        reply = urllib.request.urlopen(
            urllib.request.Request(f"{url}/filter", request, {"Content-Type": "application/json"}),
            timeout=PATIENCE,
        )
        answer = json.loads(reply.read())
        assert answer["Error"].startswith("policyext has no policies loaded yet")
        assert not answer["NodeNames"]
    finally:
        server.stop()
