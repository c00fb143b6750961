"""The admission webhook's metrics (`policyext webhook`'s GET /metrics).

The webhook is a process of its own with one worker (wsgi.WebhookServer), so its counters
live in one registry of their own, never in the extender's multiprocess files. What an
operator asks of it: how many reviews it answered and how (allowed, refused), how long
they took (the API server waits for each, up to the configuration's timeoutSeconds), how
often it could not check a policy against the other sources, and every HTTP answer by
status, so that a webhook answering 4xx or 5xx to the API server is seen before someone's
`kubectl apply` fails.
"""

from __future__ import annotations

import platform
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from policyext.server.metrics import LATENCY_BUCKETS, build_version

# the operations an AdmissionReview can carry; anything else is counted as "other", so a
# client sending made-up operations cannot grow the series without bound
OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
# the webhook's paths by endpoint label; any other path is "unknown"
ENDPOINTS: Final = {
    "/validate-schedulingpolicy": "validate",
    "/healthz": "healthz",
    "/metrics": "metrics",
}


class WebhookMetrics:
    """The webhook's counters; `render()` serves /metrics."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.reviews = Counter(
            "policyext_webhook_reviews_total",
            "AdmissionReviews answered, by operation and result (allowed, refused).",
            ["operation", "result"],
            registry=r,
        )
        self.warnings = Counter(
            "policyext_webhook_warnings_total",
            "Warnings given with allowed reviews (an optional field read unguarded, the"
            " other policy sources unreadable).",
            registry=r,
        )
        self.unchecked = Counter(
            "policyext_webhook_unchecked_reviews_total",
            "Reviews judged without the other policy sources (--rules, the ConfigMap),"
            " which could not be read: a name they hold is not refused then.",
            registry=r,
        )
        self.latency = Histogram(
            "policyext_webhook_review_duration_seconds",
            "Time to judge an AdmissionReview and answer it.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.requests = Counter(
            "policyext_webhook_requests_total",
            "HTTP requests answered, by endpoint (validate, healthz, metrics; unknown for"
            " any other path) and HTTP status.",
            ["endpoint", "code"],
            registry=r,
        )
        Gauge(
            "policyext_build_info",
            "The policyext version serving (value 1).",
            ["version", "python"],
            registry=r,
        ).labels(build_version(), platform.python_version()).set(1)
        for result in ("allowed", "refused"):  # present at 0 before the first review
            for operation in ("CREATE", "UPDATE"):
                self.reviews.labels(operation, result)
        self.requests.labels("validate", "200")

    def reviewed(
        self, operation: str, allowed: bool, warnings: int, unchecked: bool, seconds: float
    ) -> None:
        label = operation if operation in OPERATIONS else "other"
        self.reviews.labels(label, "allowed" if allowed else "refused").inc()
        if warnings:
            self.warnings.inc(warnings)
        if unchecked:
            self.unchecked.inc()
        self.latency.observe(seconds)

    def answered(self, path: str, status: int) -> None:
        self.requests.labels(ENDPOINTS.get(path, "unknown"), str(status)).inc()

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
