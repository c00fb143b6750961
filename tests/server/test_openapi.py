"""schemas/openapi.yaml describes the API the server really has: it is a valid OpenAPI 3.1
document, its paths are the application's routes, and the committed fixtures and live
replies conform to its schemas."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from policyext.server.app import create_app
from policyext.store import PolicyStore
from tests.server.harness import REPO, ExtenderServer
from tests.server.kube import args_with_names, fixture, pod

SPEC_PATH = REPO / "schemas" / "openapi.yaml"
SPEC: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
URI = "urn:policyext:openapi"
REGISTRY: Registry[Any] = Registry().with_resource(URI, DRAFT202012.create_resource(SPEC))
METHODS = {"get", "post", "put", "delete", "patch"}


def conforms(instance: object, schema: str) -> list[str]:
    """The violations of `instance` against components/schemas/`schema`."""
    validator = Draft202012Validator(
        {"$ref": f"{URI}#/components/schemas/{schema}"}, registry=REGISTRY
    )
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


def test_the_document_is_valid_openapi_3_1() -> None:
    validator = pytest.importorskip("openapi_spec_validator", reason="an optional dev tool")
    assert SPEC["openapi"].startswith("3.1")
    validator.validate(SPEC)


def test_its_paths_and_methods_are_exactly_the_applications_routes() -> None:
    app = create_app(PolicyStore())
    served = {
        (method.lower(), rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in rule.methods or ()
        if method.lower() in METHODS
    }
    documented = {
        (method, path)
        for path, item in SPEC["paths"].items()
        for method in item
        if method in METHODS
    }
    assert documented == served


FIXTURE_SCHEMAS = [
    ("filter-names.request.json", "ExtenderArgs"),
    ("filter-nodes.request.json", "ExtenderArgs"),
    ("prioritize-names.request.json", "ExtenderArgs"),
    ("prioritize-nodes.request.json", "ExtenderArgs"),
    ("bind.request.json", "ExtenderBindingArgs"),
    ("preempt-victims.request.json", "ExtenderPreemptionArgs"),
    ("preempt-meta-victims.request.json", "ExtenderPreemptionArgs"),
    ("filter-names.reply.json", "ExtenderFilterResult"),
    ("filter-nodes.reply.json", "ExtenderFilterResult"),
    ("prioritize-names.reply.json", "HostPriorityList"),
    ("prioritize-nodes.reply.json", "HostPriorityList"),
    ("bind.reply.json", "ExtenderBindingResult"),
    ("preempt-victims.reply.json", "ExtenderPreemptionResult"),
    ("preempt-meta-victims.reply.json", "ExtenderPreemptionResult"),
]


@pytest.mark.parametrize(("name", "schema"), FIXTURE_SCHEMAS)
def test_each_committed_fixture_conforms_to_its_schema(name: str, schema: str) -> None:
    assert conforms(fixture(name), schema) == []


@pytest.mark.parametrize(
    ("document", "schema"),
    [
        ({"Pod": {}, "Nodes": None, "NodeNames": None}, "ExtenderArgs"),
        ({"Pod": {}, "NodeNames": [3]}, "ExtenderArgs"),
        ([{"Host": "a", "Score": 5.5}], "HostPriorityList"),
        ([{"Host": "a", "Score": 11}], "HostPriorityList"),
        ({"Nodes": None, "NodeNames": [], "FailedNodes": {}, "Error": ""}, "ExtenderFilterResult"),
        (
            {"NodeNameToMetaVictims": {"a": {"Pods": [{"uid": "x"}], "NumPDBViolations": 0}}},
            "ExtenderPreemptionResult",
        ),
    ],
    ids=[
        "args without nodes",
        "a node name that is a number",
        "a fractional score",
        "a score above 10",
        "a filter result without FailedAndUnresolvableNodes",
        "a victim key in the wrong case",
    ],
)
def test_the_schemas_reject_what_kube_scheduler_would_not_take(
    document: object, schema: str
) -> None:
    assert conforms(document, schema) != []


def test_live_replies_of_the_other_endpoints_conform(demo_server: ExtenderServer) -> None:
    request = args_with_names(pod("api-1", "shop"), ["general-a", "spot-c", "gone-7"])
    replies = [
        (demo_server.post_json("/explain", request).json(), "Explanation"),
        (demo_server.get("/readyz").json(), "Readiness"),
        (demo_server.get("/policies").json(), "PolicyListing"),
        (demo_server.post_json("/filter", {"Pod": "x"}).json(), "Error"),
        (demo_server.get("/nope").json(), "Error"),
    ]
    for document, schema in replies:
        assert conforms(document, schema) == [], schema


def test_the_documented_filter_example_is_a_real_reply() -> None:
    example = SPEC["paths"]["/filter"]["post"]["responses"]["200"]["content"]["application/json"][
        "example"
    ]
    assert example == fixture("filter-names.reply.json")
