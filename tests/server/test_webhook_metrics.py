"""`policyext webhook`'s /metrics: reviews counted by operation and result, warnings, the
reviews judged without the other sources, the time each took, and every HTTP answer by
endpoint and status. Against the real process over TLS, as Prometheus scrapes it; the
unreadable other sources through the application itself (no cluster here)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
from prometheus_client import CONTENT_TYPE_LATEST

pytest.importorskip("cryptography", reason="the webhook's certificate is made with cryptography")

from policyext.server.admission import PATH, create_webhook_app
from policyext.server.admission_metrics import WebhookMetrics
from tests.server.certs import make_pki
from tests.server.harness import ExtenderServer
from tests.server.metrics_scrape import Scrape
from tests.server.test_tls import client_context
from tests.server.test_webhook import GOOD, _with
from tests.server.webhook_server import ask, review, start_webhook

REVIEWS = "policyext_webhook_reviews_total"
REQUESTS = "policyext_webhook_requests_total"


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExtenderServer]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    server = start_webhook(
        tmp_path_factory.mktemp("webhook"), pki.server.cert, pki.server.key, client_context(pki.ca)
    )
    yield server
    server.stop()


def _scrape(webhook: ExtenderServer) -> Scrape:
    reply = webhook.request("GET", "/metrics")
    assert reply.status == 200
    assert reply.content_type == CONTENT_TYPE_LATEST  # the text format Prometheus reads
    return Scrape(reply.body.decode())


def _unguarded() -> dict[str, object]:
    obj = copy.deepcopy(GOOD)
    obj["spec"]["filters"][0]["expression"] = "node.metadata.labels['gpu'] == 'true'"
    return obj


def test_before_any_review_the_series_an_alert_reads_are_there_at_zero(
    webhook: ExtenderServer,
) -> None:
    scrape = _scrape(webhook)
    for result in ("allowed", "refused"):
        assert (REVIEWS, frozenset({("operation", "CREATE"), ("result", result)})) in (
            scrape.samples
        )
    assert scrape.types["policyext_webhook_review_duration_seconds"] == "histogram"
    assert scrape.total("policyext_build_info") == 1


def test_each_review_is_counted_by_operation_and_result_and_timed(
    webhook: ExtenderServer,
) -> None:
    before = _scrape(webhook)
    sent = [
        (GOOD, "CREATE"),
        (_with("a syntax error"), "CREATE"),
        (_with("two rules of one name"), "UPDATE"),
        (_unguarded(), "UPDATE"),
        (GOOD, "DELETE"),
    ]
    for obj, operation in sent:
        assert ask(webhook, review(obj, operation))[0] == 200
    after = _scrape(webhook)

    def added(name: str, **labels: str) -> float:
        return after.total(name, labels) - before.total(name, labels)

    assert added(REVIEWS, operation="CREATE", result="allowed") == 1
    assert added(REVIEWS, operation="CREATE", result="refused") == 1
    assert added(REVIEWS, operation="UPDATE", result="refused") == 1
    assert added(REVIEWS, operation="UPDATE", result="allowed") == 1
    assert added(REVIEWS, operation="DELETE", result="allowed") == 1
    assert added("policyext_webhook_warnings_total") == 1
    assert added("policyext_webhook_unchecked_reviews_total") == 0
    assert added("policyext_webhook_review_duration_seconds_count") == len(sent)
    assert added("policyext_webhook_review_duration_seconds_sum") > 0
    assert added(REQUESTS, endpoint="validate", code="200") == len(sent)


def test_an_operation_no_review_carries_is_counted_as_other(webhook: ExtenderServer) -> None:
    """A made-up operation is allowed unread (nothing written to check) and never becomes
    a series of its own, however many a client makes up."""
    before = _scrape(webhook)
    for made_up in ("PATCH", "X" * 200):
        assert ask(webhook, review(GOOD, made_up))[0] == 200
    after = _scrape(webhook)
    labels = {"operation": "other", "result": "allowed"}
    assert after.total(REVIEWS, labels) - before.total(REVIEWS, labels) == 2
    assert not any(("operation", "PATCH") in key[1] for key in after.samples)


@pytest.mark.parametrize(
    ("method", "path", "body", "endpoint", "code"),
    [
        ("POST", PATH, b"{no", "validate", "400"),
        ("GET", PATH, b"", "validate", "405"),
        ("POST", "/filter", b"{}", "unknown", "404"),
        ("GET", "/healthz", b"", "healthz", "200"),
        ("POST", PATH, b"x" * (3 * 1024 * 1024 + 1), "validate", "413"),
    ],
    ids=["a body not JSON", "a GET of the review path", "another path", "a probe", "too large"],
)
def test_every_answer_is_counted_by_endpoint_and_status(
    webhook: ExtenderServer, method: str, path: str, body: bytes, endpoint: str, code: str
) -> None:
    labels = {"endpoint": endpoint, "code": code}
    before = _scrape(webhook).total(REQUESTS, labels)
    reply = webhook.request(method, path, body, {"Content-Type": "application/json"})
    assert str(reply.status) == code
    assert _scrape(webhook).total(REQUESTS, labels) - before == 1


def test_a_review_judged_without_the_other_sources_is_counted_as_unchecked() -> None:
    """The ConfigMap of policies unreadable: the review is allowed with a warning saying so,
    and counted apart, for an alert to tell that names are not being checked."""

    def unreadable() -> dict[str, str]:
        raise ConnectionError("the API server is not answering")

    metrics = WebhookMetrics()
    client = create_webhook_app((), unreadable, metrics).test_client()
    answer = client.post(PATH, data=json.dumps(review(GOOD)), content_type="application/json")
    assert answer.status_code == 200
    assert answer.get_json()["response"]["allowed"] is True
    scrape = Scrape(client.get("/metrics").get_data(as_text=True))
    assert scrape.total("policyext_webhook_unchecked_reviews_total") == 1
    assert scrape.total("policyext_webhook_warnings_total") == 1
    assert scrape.total(REVIEWS, {"result": "allowed"}) == 1
