"""The SchedulingPolicy CRD in the chart's crds/: generated from the policies' JSON Schema,
structural, and shipped where helm installs CRDs from. (tests/e2e/test_crd.py puts it in a
real API server.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.chart.chart import CHART, Chart
from tests.chart.crd import OUTPUT, NotStructural, crd, crd_yaml, structural

Json = dict[str, Any]
COMBINATORS = ("allOf", "anyOf", "oneOf", "not")


def test_the_committed_crd_is_what_make_crd_generates_from_the_schema() -> None:
    assert OUTPUT.read_text() == crd_yaml(), "run `make crd` and commit the result"


def test_the_crd_lives_in_the_chart_crds_folder_and_helm_reads_it(chart: Chart) -> None:
    assert OUTPUT.parent == CHART / "crds"
    shown = [d for d in yaml.safe_load_all(chart.run("show", "crds", str(CHART))) if d]
    assert [d["metadata"]["name"] for d in shown] == ["schedulingpolicies.policyext.io"]
    assert shown[0] == crd()


def test_the_crd_names_kind_version_scope_and_short_name() -> None:
    spec = crd()["spec"]
    assert spec["group"] == "policyext.io"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == "SchedulingPolicy"
    assert spec["names"]["shortNames"] == ["schedpol"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Ready", "Filters", "Scores", "Mode", "Age"]


def _schema() -> Json:
    schema: Json = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _typed_nodes(node: Json, path: str = "") -> Iterator[tuple[str, Json]]:
    """Every node that must carry a type: the root, properties, items, additionalProperties."""
    yield path or "(root)", node
    for name, child in node.get("properties", {}).items():
        yield from _typed_nodes(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _typed_nodes(node[key], f"{path}[{key}]")


def _combined(node: Any) -> Iterator[Json]:
    """Every node inside a logical combinator."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in COMBINATORS:
                inner = value if isinstance(value, list) else [value]
                for each in inner:
                    yield from _all_nodes(each)
            else:
                yield from _combined(value)
    elif isinstance(node, list):
        for each in node:
            yield from _combined(each)


def _all_nodes(node: Json) -> Iterator[Json]:
    yield node
    for value in node.values():
        for each in value if isinstance(value, list) else [value]:
            if isinstance(each, dict):
                yield from _all_nodes(each)


def test_every_node_of_the_crd_schema_has_a_type_and_no_json_schema_only_keyword() -> None:
    for path, node in _typed_nodes(_schema()):
        assert "type" in node, path
        assert not ("properties" in node and "additionalProperties" in node), path
    text = yaml.safe_dump(_schema())
    for keyword in ("$ref", "$defs", "uniqueItems", "const", "if:", "then:", "$schema"):
        assert keyword not in text


def test_no_type_or_description_inside_the_logical_combinators() -> None:
    inside = list(_combined(_schema()))
    assert inside  # the schema has some: anyOf filters/scores, not message+messageExpression
    for node in inside:
        assert "type" not in node and "description" not in node, node


def test_metadata_is_left_to_the_api_server_and_the_status_is_the_schemas() -> None:
    properties = _schema()["properties"]
    assert set(properties["metadata"]["properties"]) == {"name"}
    assert properties["metadata"]["properties"]["name"]["maxLength"] == 253
    status = properties["status"]["properties"]
    assert set(status) == {"observedGeneration", "filters", "scores", "mode", "conditions", "byPod"}
    condition = status["conditions"]["items"]
    assert condition["required"] == ["type", "status", "lastTransitionTime", "reason", "message"]
    assert status["byPod"]["x-kubernetes-list-map-keys"] == ["pod"]


DEFINITIONS = {"name": {"type": "string", "maxLength": 63}, "mode": {"enum": ["A", "B"]}}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(
            {"$ref": "#/$defs/name", "description": "d"},
            {"type": "string", "description": "d", "maxLength": 63},
            id="a reference is inlined, its own keys kept",
        ),
        pytest.param(
            {"$ref": "#/$defs/mode"},
            {"type": "string", "enum": ["A", "B"]},
            id="an enum of strings gets its type",
        ),
        pytest.param({"const": 3}, {"type": "integer", "enum": [3]}, id="a const is an enum"),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            id="unique strings are a list of type set",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": False, "properties": {"a": {"const": "x"}}},
            {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}},
            id="no additionalProperties false: unknown fields are pruned or refused",
        ),
        pytest.param(
            {"properties": {"a": {"type": "string"}}, "not": {"required": ["a", "b"]}},
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "not": {"required": ["a", "b"]},
            },
            id="an object gets its type",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "op": {"type": "string"},
                    "v": {"type": "array", "items": {"type": "string"}},
                },
                "if": {"properties": {"op": {"const": "In"}}},
                "then": {"required": ["v"], "properties": {"v": {"minItems": 1, "type": "array"}}},
            },
            {
                "type": "object",
                "properties": {
                    "op": {"type": "string"},
                    "v": {"type": "array", "items": {"type": "string"}},
                },
                "anyOf": [
                    {"not": {"properties": {"op": {"enum": ["In"]}}}},
                    {"required": ["v"], "properties": {"v": {"minItems": 1}}},
                ],
            },
            id="if then is anyOf not-if or then, untyped",
        ),
    ],
)
def test_the_conversion_to_a_structural_schema(given: Json, expected: Json) -> None:
    assert structural(given, DEFINITIONS) == expected


@pytest.mark.parametrize(
    "given",
    [
        {"type": "string", "contentEncoding": "base64"},
        {"$ref": "https://example.com/other.json"},
        {"if": {"required": ["a"]}, "properties": {"a": {"type": "string"}}},
        {"type": "object", "additionalProperties": True},
        {"description": "no type and nothing to infer it from"},
    ],
    ids=["an unknown keyword", "a remote reference", "if without then", "any field", "untyped"],
)
def test_what_has_no_structural_equivalent_stops_the_generation(given: Json) -> None:
    with pytest.raises(NotStructural):
        structural(given, DEFINITIONS)
