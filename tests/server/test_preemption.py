"""Preempt decides on the node as it would be once the victims are gone, whether the
scheduler sends the victims whole or, when nodeCacheCapable, only their UIDs.

Served with the Flask test client: this is about the verb's semantics over a node source,
which a real server would not change.
"""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_texts
from policyext.server.app import create_app
from policyext.store import PolicyStore
from tests.server.kube import Json, node, pod

FITS_CPU = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: room
spec:
  filters:
    - name: enough-free-cpu
      expression: "nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0"
      message: "not enough free CPU"
"""
VICTIM = {**pod("batch-1", "batch", requests={"cpu": "3"}), "kind": "Pod"}
VICTIM["spec"]["nodeName"] = "n1"
VICTIM["status"] = {"phase": "Running"}
VICTIM_UID = VICTIM["metadata"]["uid"]
PREEMPTOR = pod("urgent-1", "shop", requests={"cpu": "2"})


@pytest.fixture(scope="module")
def client() -> FlaskClient:
    store = PolicyStore()
    assert store.reload(lambda: load_policy_texts({"room.yaml": FITS_CPU}), "test").ok
    source = SnapshotSource([{**node("n1", cpu="4"), "kind": "Node"}, VICTIM])
    return create_app(store, source).test_client()


def _post(client: FlaskClient, path: str, body: Json) -> Json:
    reply = client.post(path, data=json.dumps(body), content_type="application/json")
    assert reply.status_code == 200
    result: Json = reply.get_json()
    return result


def test_the_node_is_full_before_preemption(client: FlaskClient) -> None:
    result = _post(client, "/filter", {"Pod": PREEMPTOR, "NodeNames": ["n1"]})
    assert result["FailedNodes"] == {"n1": "not enough free CPU"}


@pytest.mark.parametrize(
    "request_body",
    [
        pytest.param(
            {
                "Pod": PREEMPTOR,
                "NodeNameToVictims": {"n1": {"Pods": [VICTIM], "NumPDBViolations": 0}},
            },
            id="victims sent whole",
        ),
        pytest.param(
            {
                "Pod": PREEMPTOR,
                "NodeNameToMetaVictims": {
                    "n1": {"Pods": [{"UID": VICTIM_UID}], "NumPDBViolations": 0}
                },
            },
            id="victims sent as UIDs",
        ),
    ],
)
def test_preempt_accepts_the_node_once_the_victims_are_gone(
    client: FlaskClient, request_body: Json
) -> None:
    result = _post(client, "/preempt", request_body)
    assert result == {
        "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": VICTIM_UID}], "NumPDBViolations": 0}}
    }


def test_preempt_refuses_a_node_the_victims_do_not_free_enough(client: FlaskClient) -> None:
    huge = pod("huge-1", requests={"cpu": "4500m"})  # more than the node has
    body = {"Pod": huge, "NodeNameToVictims": {"n1": {"Pods": [VICTIM], "NumPDBViolations": 0}}}
    assert _post(client, "/preempt", body) == {"NodeNameToMetaVictims": {}}


def test_preempt_leaves_out_a_node_it_cannot_see_and_decides_on_the_others(
    client: FlaskClient,
) -> None:
    """A candidate node the node source lacks (removed since the scheduler's snapshot)
    cannot be accepted; the candidates after it are still decided on."""
    body = {
        "Pod": PREEMPTOR,
        "NodeNameToMetaVictims": {
            "gone": {"Pods": [{"UID": "uid-elsewhere"}], "NumPDBViolations": 0},
            "n1": {"Pods": [{"UID": VICTIM_UID}], "NumPDBViolations": 0},
        },
    }
    assert _post(client, "/preempt", body) == {
        "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": VICTIM_UID}], "NumPDBViolations": 0}}
    }
