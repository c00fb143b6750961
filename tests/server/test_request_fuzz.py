"""Hypothesis over the shapes of the extender's requests, in process (Flask's test client):
whatever the body, a verb answers 200 with a reply of the protocol's schema or 400 with a
JSON error, never a server error. Bounded example counts keep it a unit test; the
`explore` profile of tests/conftest.py searches new examples (HYPOTHESIS_PROFILE=explore).
The live server is fuzzed from its OpenAPI description in test_schemathesis.py."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from policyext.cluster.snapshot import SnapshotSource
from policyext.policy.compile import load_policy_set
from policyext.server.app import create_app
from policyext.store import PolicyStore
from tests.server.harness import CLUSTER, RULES
from tests.server.hostile import KNOWN, POD
from tests.server.test_openapi import REGISTRY, URI

FUZZ = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
REPLY_SCHEMA = {
    "/filter": "ExtenderFilterResult",
    "/prioritize": "HostPriorityList",
    "/preempt": "ExtenderPreemptionResult",
    "/bind": "ExtenderBindingResult",
    "/explain": "Explanation",
}


@pytest.fixture(scope="module")
def client() -> FlaskClient:
    store = PolicyStore()
    store.reload(lambda: load_policy_set([RULES]), str(RULES))
    return create_app(store, SnapshotSource.from_file(str(CLUSTER))).test_client()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
names = st.lists(st.sampled_from([*KNOWN, "nowhere", ""]) | st.text(max_size=6), max_size=8)
node = st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({"name": st.sampled_from(KNOWN) | st.text(max_size=6)})},
    optional={"status": json_values, "spec": json_values},
)
pod = st.just(POD) | st.dictionaries(st.sampled_from(["metadata", "spec", "status"]), json_values)


def _case(key: str) -> st.SearchStrategy[str]:
    """A key as Go would accept it: in any case."""
    return st.sampled_from([key, key.lower(), key.upper()])


def _object(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """An object with some of `fields`, each in any case or replaced by any JSON value,
    and perhaps a key of no meaning."""
    entries = [st.tuples(_case(k), v | json_values) for k, v in fields.items()] + [
        st.tuples(st.text(max_size=6), json_values)
    ]
    return st.lists(st.one_of(entries), max_size=len(fields) + 1).map(dict)


extender_args = _object(
    {
        "Pod": pod,
        "Nodes": st.none() | st.fixed_dictionaries({"items": st.lists(node, max_size=4)}),
        "NodeNames": st.none() | names,
    }
)
victims = st.fixed_dictionaries(
    {},
    optional={
        "Pods": st.lists(st.fixed_dictionaries({"UID": st.text(max_size=4)}), max_size=3),
        "NumPDBViolations": st.integers(-3, 3),
    },
)
preemption_args = _object(
    {
        "Pod": pod,
        "NodeNameToVictims": st.dictionaries(st.sampled_from(KNOWN), victims, max_size=3),
        "NodeNameToMetaVictims": st.dictionaries(st.sampled_from(KNOWN), victims, max_size=3),
    }
)
binding_args = _object(
    {k: st.text(max_size=6) for k in ("PodName", "PodNamespace", "PodUID", "Node")}
)


REQUEST_SCHEMA = {
    "/filter": "ExtenderArgs",
    "/prioritize": "ExtenderArgs",
    "/explain": "ExtenderArgs",
    "/preempt": "ExtenderPreemptionArgs",
    "/bind": "ExtenderBindingArgs",
}


@functools.cache
def _validator(schema: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"{URI}#/components/schemas/{schema}"}, registry=REGISTRY)


def _assert_answered(client: FlaskClient, path: str, body: bytes) -> None:
    """Any body: 200 or a JSON 400. A request of the documented shape: a reply of the
    documented shape (the server answers more than that, as Go's decoder reads more)."""
    reply = client.post(path, data=body, content_type="application/json")
    assert reply.status_code in (200, 400), (reply.status_code, reply.data[:300])
    assert reply.mimetype == "application/json"
    document = json.loads(reply.data)
    if reply.status_code == 400:
        assert _validator("Error").is_valid(document)
        return
    try:
        request = json.loads(body)
    except ValueError:
        return
    if _validator(REQUEST_SCHEMA[path]).is_valid(request):
        errors = [e.message for e in _validator(REPLY_SCHEMA[path]).iter_errors(document)]
        assert errors == [], (request, document)


@pytest.mark.parametrize("path", ["/filter", "/prioritize", "/explain"])
@FUZZ
@given(document=extender_args)
def test_any_extender_args_shape_is_answered_by_the_protocol_or_a_400(
    client: FlaskClient, path: str, document: dict[str, Any]
) -> None:
    _assert_answered(client, path, json.dumps(document).encode())


@FUZZ
@given(document=preemption_args)
def test_any_preemption_args_shape_is_answered_by_the_protocol_or_a_400(
    client: FlaskClient, document: dict[str, Any]
) -> None:
    _assert_answered(client, "/preempt", json.dumps(document).encode())


@FUZZ
@given(document=binding_args)
def test_any_binding_args_shape_is_answered_by_the_protocol_or_a_400(
    client: FlaskClient, document: dict[str, Any]
) -> None:
    _assert_answered(client, "/bind", json.dumps(document).encode())


@FUZZ
@given(body=st.binary(max_size=64) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_at_all_are_answered_by_the_protocol_or_a_400(
    client: FlaskClient, body: bytes
) -> None:
    _assert_answered(client, "/filter", body)
