"""schemathesis against the live server, from schemas/openapi.yaml: requests generated from
the documented schemas (and, in its negative mode, against them) are sent to a real
gunicorn server, and every reply must be no server error, with a documented status code,
a documented content type, and a body of the documented schema. Bounded example counts
keep it a unit test; HYPOTHESIS_PROFILE=explore searches new examples."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extra")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.server.harness import REPO, ExtenderServer  # noqa: E402

SCHEMA = schemathesis.openapi.from_path(str(REPO / "schemas" / "openapi.yaml"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@SCHEMA.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_documented_operation_answers_as_documented(
    case: schemathesis.Case, demo_server: ExtenderServer
) -> None:
    case.call_and_validate(
        base_url=f"http://{demo_server.host}:{demo_server.port}", checks=CHECKS, timeout=10
    )
