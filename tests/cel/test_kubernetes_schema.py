"""The types of `pod` and `node` (policyext/cel/schemas/kubernetes.json) are what the
generator makes from the pinned release's OpenAPI description: nothing edited by hand, and
`make cel-schema` is the way to refresh them."""

from __future__ import annotations

import json

from policyext import cel
from tests.cel import kubernetes_cel, kubernetes_schema
from tests.unavailable import skip_or_fail


def test_the_committed_schema_file_is_what_the_generator_makes() -> None:
    if not kubernetes_cel.go_available():
        skip_or_fail("no Go toolchain: cannot fetch Kubernetes' OpenAPI description")
    swagger = json.loads(kubernetes_cel.swagger_path().read_text())
    version = kubernetes_schema.KUBERNETES_MODULE.split("@")[1]
    made = kubernetes_schema.convert(swagger["definitions"], kubernetes_schema.ROOTS, version)
    assert json.loads(kubernetes_schema.OUTPUT.read_text()) == made


def test_the_schema_file_names_its_source_and_types_both_roots() -> None:
    assert "k8s.io/kubernetes v1.37" in json.loads(kubernetes_schema.OUTPUT.read_text())["source"]
    assert str(cel.kubernetes_type("pod")) == "Pod"
    assert str(cel.kubernetes_type("node")) == "Node"


def test_a_type_expression_of_the_schema_file_reads_as_its_cel_type() -> None:
    fields = cel.kubernetes_type("node").fields
    assert str(fields["spec"].fields["taints"]) == "list(Taint)"
    assert str(fields["metadata"].fields["labels"]) == "map(string, string)"
    assert str(fields["metadata"].fields["creationTimestamp"]) == "google.protobuf.Timestamp"
