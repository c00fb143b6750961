"""`policyext webhook`: AdmissionReview v1 of SchedulingPolicy objects over TLS, answered
with the verdict of `policyext validate` by field path, the warnings as admission warnings,
a name another source holds refused as the watch refuses it, and bad input a 400 with a
JSON body. Against the real process (gunicorn, TLS) with a verifying client, as the API
server calls it."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("cryptography", reason="the webhook's certificate is made with cryptography")

from policyext.cluster.policy_sources import PolicySources
from policyext.cluster.rules_crd import PolicyObjects, policy_text
from policyext.server.admission import judge, parse_review
from policyext.store import PolicyStore
from tests.cli.run import policyext
from tests.server.certs import Pki, make_pki
from tests.server.harness import ExtenderServer, policyext_command
from tests.server.test_tls import client_context
from tests.server.webhook_server import ask, review, start_webhook
from tests.waiting import PATIENCE

Json = dict[str, Any]

GOOD: Json = {
    "apiVersion": "policyext.io/v1alpha1",
    "kind": "SchedulingPolicy",
    "metadata": {"name": "gpu-only", "uid": "u-1", "generation": 3, "managedFields": []},
    "spec": {
        "filters": [
            {
                "name": "has-gpu",
                "expression": "'gpu' in node.metadata.?labels.orValue({})",
            }
        ]
    },
}


def _with(change: str) -> Json:
    obj = copy.deepcopy(GOOD)
    filters = obj["spec"]["filters"]
    if change == "a field ObjectMeta does not have":
        filters.append({"name": "typo", "expression": "node.metadata.labelz.size() == 0"})
    elif change == "a syntax error":
        filters.append({"name": "oops", "expression": "node.(("})
    elif change == "two rules of one name":
        filters.append(copy.deepcopy(filters[0]))
    elif change == "a score that is a string":
        obj["spec"]["scores"] = [{"name": "s", "expression": "'high'", "weight": 1}]
    elif change == "an expression nested past the limit":
        filters.append({"name": "deep", "expression": f"size({'[' * 60}1{']' * 60}) > 0"})
    elif change == "an unknown field of the spec":
        obj["spec"]["filterz"] = []
    else:
        raise AssertionError(change)
    return obj


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def taken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of the extender's policies, one of them named `zone-preference`."""
    folder = tmp_path_factory.mktemp("rules")
    (folder / "zone.yaml").write_text(
        yaml.safe_dump({**copy.deepcopy(GOOD), "metadata": {"name": "zone-preference"}})
    )
    return folder


@pytest.fixture(scope="module")
def webhook(
    tmp_path_factory: pytest.TempPathFactory, pki: Pki, taken: Path
) -> Iterator[ExtenderServer]:
    server = start_webhook(
        tmp_path_factory.mktemp("webhook"),
        pki.server.cert,
        pki.server.key,
        client_context(pki.ca),
        "--rules",
        str(taken),
    )
    yield server
    server.stop()


def _answer(webhook: ExtenderServer, obj: Json, operation: str = "CREATE") -> Json:
    asked = review(obj, operation)
    status, body = ask(webhook, asked)
    assert status == 200, body
    assert (body["apiVersion"], body["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert body["response"]["uid"] == asked["request"]["uid"]
    answer: Json = body["response"]
    return answer


def _validate_messages(obj: Json, folder: Path) -> list[str]:
    """What `policyext validate` prints of the object, each line's message alone."""
    path = folder / f"{obj['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(obj))
    result = policyext("validate", path)
    assert result.returncode == 1, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{path}:")]
    return [re.sub(r"^\S+:\d+:\d+: ", "", line) for line in lines]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            "a field ObjectMeta does not have",
            "spec.filters[1].expression: 1:15: no field 'labelz' in ObjectMeta",
        ),
        ("a syntax error", "spec.filters[1].expression: 1:6:"),
        (
            "two rules of one name",
            "spec.filters[1]: duplicate rule name (first defined at spec.filters[0])",
        ),
        ("a score that is a string", "spec.scores[0].expression:"),
        (
            "an expression nested past the limit",
            "spec.filters[1].expression: 1:55: expression nested more than 50 levels deep",
        ),
        ("an unknown field of the spec", "spec.filterz: spec: unknown field 'filterz'"),
    ],
)
def test_a_broken_policy_is_refused_with_what_validate_says_by_field_path(
    webhook: ExtenderServer, tmp_path: Path, change: str, expected: str
) -> None:
    obj = _with(change)
    answer = _answer(webhook, obj)
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    problems = answer["status"]["message"].split("\n")
    assert any(p.startswith(expected) for p in problems), problems
    # each problem is validate's message, said at its field path instead of a file position
    said = _validate_messages(obj, tmp_path)
    assert len(problems) == len(said)
    for problem, line in zip(problems, said, strict=True):
        message = line.split(": ", 1)[-1].split(" (expression ")[0].split(" (first defined")[0]
        assert message in problem, (problem, line)


def test_the_refusal_is_the_message_the_status_gives_a_refused_generation() -> None:
    """One formatting: what the webhook answers is what the status says (policy_status)."""
    obj = _with("a field ObjectMeta does not have")
    store = PolicyStore()
    outcomes: dict[str, Any] = {}
    sources = PolicySources(store, [], objects=True, on_outcomes=outcomes.update)
    text_name = "schedulingpolicy/gpu-only"
    sources.objects_changed(PolicyObjects({text_name: policy_text(obj)}, {text_name: 3}))
    verdict = judge(parse_review(json.dumps(review(obj)).encode()))
    assert verdict.problems == outcomes["gpu-only"].problems


def test_a_good_policy_is_allowed_without_warnings(webhook: ExtenderServer) -> None:
    answer = _answer(webhook, GOOD)
    assert answer["allowed"] is True
    assert "warnings" not in answer and "status" not in answer


def test_an_unguarded_read_of_an_optional_field_is_allowed_with_a_warning(
    webhook: ExtenderServer,
) -> None:
    obj = copy.deepcopy(GOOD)
    obj["spec"]["filters"][0]["expression"] = "node.metadata.labels['gpu'] == 'true'"
    answer = _answer(webhook, obj, "UPDATE")
    assert answer["allowed"] is True
    [warning] = answer["warnings"]
    assert warning.startswith("spec.filters[0].expression: ")
    assert "labels" in warning


def test_a_policy_named_as_one_of_the_extenders_files_is_refused(
    webhook: ExtenderServer, taken: Path
) -> None:
    obj = copy.deepcopy(GOOD)
    obj["metadata"]["name"] = "zone-preference"
    answer = _answer(webhook, obj)
    assert answer["allowed"] is False
    assert "duplicate policy name" in answer["status"]["message"]
    assert str(taken / "zone.yaml") in answer["status"]["message"]


def test_a_delete_is_allowed_unread(webhook: ExtenderServer) -> None:
    assert _answer(webhook, GOOD, "DELETE")["allowed"] is True


def test_another_resource_is_refused_as_a_misconfiguration(webhook: ExtenderServer) -> None:
    asked = review(GOOD)
    asked["request"]["resource"] = {"group": "", "version": "v1", "resource": "configmaps"}
    status, body = ask(webhook, asked)
    assert status == 200
    assert body["response"]["allowed"] is False
    assert "schedulingpolicies.policyext.io only" in body["response"]["status"]["message"]


def _breaking(what: str) -> bytes:
    asked = review(GOOD)
    if what == "not JSON":
        return b"{no"
    if what == "a JSON list":
        return b"[]"
    if what == "an AdmissionReview v1beta1":
        asked["apiVersion"] = "admission.k8s.io/v1beta1"
    elif what == "no request":
        del asked["request"]
    elif what == "no uid":
        del asked["request"]["uid"]
    elif what == "a CREATE without its object":
        del asked["request"]["object"]
    elif what == "an object that is a string":
        asked["request"]["object"] = "policy"
    return json.dumps(asked).encode()


@pytest.mark.parametrize(
    ("what", "said"),
    [
        ("not JSON", "the body is not JSON"),
        ("a JSON list", "must be a JSON object"),
        ("an AdmissionReview v1beta1", "expected apiVersion admission.k8s.io/v1"),
        ("no request", "request must be an object"),
        ("no uid", "request.uid must be a non-empty string"),
        ("a CREATE without its object", "request.object must be an object for CREATE"),
        ("an object that is a string", "request.object must be an object for CREATE"),
    ],
)
def test_a_body_that_is_not_an_admission_review_is_a_400_saying_why(
    webhook: ExtenderServer, what: str, said: str
) -> None:
    status, body = ask(webhook, _breaking(what))
    assert status == 400
    assert body["status"] == 400
    assert said in body["error"]
    assert "Traceback" not in webhook.stderr_text()


def test_another_path_or_method_is_a_json_error(webhook: ExtenderServer) -> None:
    reply = webhook.request("GET", "/validate-schedulingpolicy")
    assert reply.status == 405 and reply.json()["status"] == 405
    reply = webhook.request("POST", "/filter", b"{}")
    assert reply.status == 404 and reply.json()["status"] == 404


def test_the_webhook_refuses_to_start_without_a_certificate() -> None:
    result = subprocess.run(
        [*policyext_command(), "webhook", "--bind", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=PATIENCE,
    )
    assert result.returncode == 2
    assert "--tls-cert and --tls-key are required" in result.stderr
