"""The operations endpoints, for people and their tools rather than kube-scheduler:
/healthz and /readyz (the probes), /metrics (Prometheus), and introspection: /explain
(what the policies decide for a pod, and why) and /policies (what is loaded)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

import orjson
from flask import Flask, Response

from policyext.cel import Timestamp
from policyext.policy import LiveNodeSource, evaluation_to_dict
from policyext.server import draining, statuses, verbs, wire
from policyext.server.metrics import Metrics
from policyext.server.request_body import json_body
from policyext.store import PolicyStore

# the views' names (Flask's endpoints), for the listener each is served on
OPS_VIEWS: Final = frozenset(("healthz", "readyz", "metrics_view", "explain_view", "policies"))
INTROSPECTION_VIEWS: Final = frozenset(("explain_view", "policies"))


def add_operation_views(
    app: Flask,
    store: PolicyStore,
    source: LiveNodeSource | None,
    metrics: Metrics,
    clock: Callable[[], int],
    request_deadline: float,
) -> None:
    """POST /explain, GET /healthz, /readyz, /policies and /metrics."""

    @app.post("/explain")
    def explain_view() -> Response:
        args = wire.parse_extender_args(json_body(), nodes_required=False)
        started = time.perf_counter()
        now, deadline = Timestamp(clock()), started + request_deadline
        ev, unknown = verbs.run_explain(store.current, source, args, now, deadline)
        metrics.observe("explain", ev, len(ev.names), time.perf_counter() - started)
        data = evaluation_to_dict(ev)
        data["unknownNodes"] = unknown
        return _json(data)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        ready, detail = _readiness(store, source)
        return _json(detail, statuses.readiness(ready))

    @app.get("/policies")
    def policies() -> Response:
        return _json(_policies(store, source))

    @app.get("/metrics")
    def metrics_view() -> Response:
        metrics.set_policy(store.current)
        data, content_type = metrics.render()
        return Response(data, status=statuses.OK, content_type=content_type)


def _json(data: object, status: int = statuses.OK) -> Response:
    return Response(orjson.dumps(data), status=status, mimetype="application/json")


def _readiness(store: PolicyStore, source: LiveNodeSource | None) -> tuple[bool, dict[str, Any]]:
    """Ready or not, and which check is not: categories only. /readyz answers anyone who
    can reach the port (the kubelet's probe has no credentials), so the policies' names,
    files and reload errors, and the node source's errors, are on /policies (introspection)
    rather than here."""
    checks: dict[str, Any] = {"policies": "loaded" if store.loaded else "not loaded"}
    ready = store.loaded
    if source is not None:
        synced = source.ready()
        checks["nodeSource"] = "synced" if synced else "not synced"
        ready = ready and synced
    status = store.status
    if status is not None and not status.ok:
        checks["lastReload"] = "failed"
    if draining.active():  # SIGTERM: out of the load balancer's rotation, still answering
        checks["shutdown"] = "draining"
        ready = False
    return ready, {"ready": ready, "policyVersion": store.current.version, "checks": checks}


def _policies(store: PolicyStore, source: LiveNodeSource | None) -> dict[str, Any]:
    current = store.current
    status = store.status
    listing: dict[str, Any] = {
        "version": current.version,
        "sources": list(current.sources),
        "policies": [
            {
                "name": p.name,
                "filters": [
                    {"name": f.rule.name, "mode": f.rule.mode, "failurePolicy": f.failure_policy}
                    for f in p.filters
                ],
                "scores": [
                    {"name": s.rule.name, "weight": s.rule.weight, "normalize": s.rule.normalize}
                    for s in p.scores
                ],
            }
            for p in current.policies
        ],
        # rules that load but fail on a pod or node without an optional field they read
        "warnings": [w.as_warning() for w in current.warnings],
        "lastReload": None
        if status is None
        else {
            "ok": status.ok,
            "at": status.at,
            "source": status.source,
            "version": status.version,
            "errors": [str(i) for i in status.issues] + ([status.error] if status.error else []),
        },
        "reloads": {"ok": store.reloads_ok, "failed": store.reloads_failed},
    }
    if source is not None:
        synced = source.ready()
        problem = "" if synced else source.sync_problem()
        listing["nodeSource"] = {"synced": synced, "problem": problem}
    return listing
