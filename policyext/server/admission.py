"""The validating admission webhook: an AdmissionReview v1 of a SchedulingPolicy in, the
verdict of `policyext validate` on it out (`policyext webhook`, wired in wsgi.py); its
metrics at /metrics (server/admission_metrics.py).

A CREATE or UPDATE is judged on the text the SchedulingPolicy watch would load
(policy.authored_text): the JSON Schema, CEL type checking, duplicate names within the
object and the cost limits, every problem said by field path as the object's status says
it (policy.field_problem), so that `kubectl apply` prints what the status would have said.
What loads but is worth knowing (an optional field read unguarded) comes back as the
review's warnings, which kubectl prints. With `others` (the policies of `--rules` and of the
ConfigMap, read at each review), an object whose policy name one of them already holds is
refused as the watch would refuse it; when the others cannot be read, the review says so
in a warning and judges the object alone (the watch still refuses it).

The webhook is its own process on its own port with its own certificate: the API server
calls it without a client certificate the verbs listener may require, and a review
(compiling a policy: milliseconds of CPU) never shares a process, a thread or the GIL with
a scheduling call. A body that is not an AdmissionReview v1 is a 400 with a JSON body
saying what is wrong (server/statuses.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from policyext.policy import (
    TEXT_PREFIX,
    PolicyError,
    authored_text,
    field_problem,
    load_policies,
)
from policyext.server import statuses
from policyext.server.admission_metrics import WebhookMetrics

log = logging.getLogger("policyext.webhook")

PATH: Final = "/validate-schedulingpolicy"
API_VERSION: Final = "admission.k8s.io/v1"
KIND: Final = "AdmissionReview"
RESOURCE: Final = ("policyext.io", "schedulingpolicies")
JUDGED: Final = frozenset({"CREATE", "UPDATE"})
MAX_BODY: Final = 3 * 1024 * 1024  # the API server's own request limit, and some
REFUSED: Final = 422  # the code of a refusal's status, as the API server's own validation
# the other sources: policy texts by name (a ConfigMap's keys), read at each review
Others = Callable[[], Mapping[str, str]]


class ReviewError(ValueError):
    """A body that is not an AdmissionReview v1 request (a 400)."""


@dataclass(frozen=True, slots=True)
class Review:
    uid: str
    operation: str
    resource: tuple[str, str]
    obj: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    unchecked: bool = False  # the other sources could not be read: judged alone


def parse_review(body: bytes) -> Review:
    """The request of an AdmissionReview v1; ReviewError says what is wrong with it."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ReviewError(f"the body is not JSON: {e}") from None
    if not isinstance(review, dict):
        raise ReviewError("the body must be a JSON object (an AdmissionReview)")
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise ReviewError(
            f"expected apiVersion {API_VERSION} and kind {KIND}, got "
            f"{review.get('apiVersion')!r} and {review.get('kind')!r}"
        )
    asked = review.get("request")
    if not isinstance(asked, dict):
        raise ReviewError("request must be an object")
    uid = asked.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("request.uid must be a non-empty string")
    operation = asked.get("operation")
    if not isinstance(operation, str):
        raise ReviewError("request.operation must be a string")
    resource = asked.get("resource")
    if not isinstance(resource, dict):
        raise ReviewError("request.resource must be an object")
    obj = asked.get("object")
    if operation in JUDGED and not isinstance(obj, dict):
        raise ReviewError(f"request.object must be an object for {operation}")
    return Review(
        uid,
        operation,
        (str(resource.get("group", "")), str(resource.get("resource", ""))),
        obj if isinstance(obj, dict) else None,
    )


def judge(review: Review, paths: Sequence[str] = (), others: Others | None = None) -> Verdict:
    """What `policyext validate` says of the object, as an admission verdict."""
    if review.operation not in JUDGED or review.obj is None:
        return Verdict(True)  # a DELETE or CONNECT: nothing written to check
    if review.resource != RESOURCE:
        group, resource = review.resource
        wanted = f"{RESOURCE[1]}.{RESOURCE[0]}"
        return Verdict(False, (f"this webhook reviews {wanted} only, not {resource}.{group}",))
    meta = review.obj.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
    text_name = f"{TEXT_PREFIX}{name}"
    text = authored_text(review.obj)
    try:
        alone = load_policies((), {text_name: text})
    except PolicyError as e:
        return Verdict(False, _problems(e, text_name, text))
    warnings = tuple(field_problem(w, text) for w in alone.warnings)
    if not paths and others is None:
        return Verdict(True, warnings=warnings)
    try:
        texts = dict(others()) if others is not None else {}
    except Exception as e:  # the ConfigMap unreadable: judged alone, and said
        log.warning("the other policy sources cannot be read: %s", e)
        note = f"not checked against the other policy sources, which cannot be read: {e}"
        return Verdict(True, warnings=(*warnings, note), unchecked=True)
    texts.pop(text_name, None)
    try:
        load_policies(paths, texts | {text_name: text})
    except PolicyError as e:
        # only a name the object shares with them is its fault (the watch refuses it too);
        # another source that does not load is not
        taken = [i for i in e.issues if i.policy == name]
        if taken:
            return Verdict(False, _problems(PolicyError(taken), text_name, text))
    return Verdict(True, warnings=warnings)


def _problems(error: PolicyError, text_name: str, text: str) -> tuple[str, ...]:
    return tuple(
        field_problem(i, text) if i.location.file == text_name else str(i) for i in error.issues
    )


def response(uid: str, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview that answers the request `uid`."""
    answer: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        answer["status"] = {
            "code": REFUSED,
            "reason": "Invalid",
            "message": "\n".join(verdict.problems),
        }
    if verdict.warnings:
        answer["warnings"] = list(verdict.warnings)
    return {"apiVersion": API_VERSION, "kind": KIND, "response": answer}


def create_webhook_app(
    paths: Sequence[str] = (), others: Others | None = None, metrics: WebhookMetrics | None = None
) -> Flask:
    """The webhook's application: POST PATH with an AdmissionReview, /healthz and /metrics."""
    app = Flask("policyext-webhook")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    counted = metrics if metrics is not None else WebhookMetrics()

    @app.post(PATH)
    def validate() -> Response:
        started = time.perf_counter()
        review = parse_review(request.get_data())
        verdict = judge(review, paths, others)
        if not verdict.allowed:
            log.info("refused %s of a SchedulingPolicy: %s", review.operation, verdict.problems)
        body = orjson.dumps(response(review.uid, verdict))
        counted.reviewed(
            review.operation,
            verdict.allowed,
            len(verdict.warnings),
            verdict.unchecked,
            time.perf_counter() - started,
        )
        return Response(body, mimetype="application/json")

    @app.get("/healthz")
    def healthz() -> Response:
        return Response(b'{"status":"ok"}', mimetype="application/json")

    @app.get("/metrics")
    def metrics_view() -> Response:
        body, content_type = counted.render()
        return Response(body, content_type=content_type)

    @app.after_request
    def count_answer(answer: Response) -> Response:
        counted.answered(request.path, answer.status_code)
        return answer

    @app.errorhandler(ReviewError)
    def bad_review(e: ReviewError) -> Response:
        return _error(statuses.BAD_REQUEST, f"not an AdmissionReview v1 request: {e}")

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException) -> Response:
        return _error(statuses.status_of(e), statuses.error_message(e, request.method, MAX_BODY))

    @app.errorhandler(Exception)
    def internal_error(e: Exception) -> Response:
        log.exception("unexpected error answering %s %s", request.method, request.path)
        return _error(statuses.status_of(e), statuses.error_message(e, request.method, MAX_BODY))

    return app


def _error(status: int, message: str) -> Response:
    body = statuses.error_body(status, message)
    return Response(body, status=status, mimetype="application/json")
