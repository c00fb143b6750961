"""`policyext serve --reports --reports-api --reports-per-second`: how the command line and
the environment become the settings the policy reports run with (cluster/policy_reports.py),
and the combinations refused as usage errors."""

from __future__ import annotations

import pytest

import policyext.wsgi
from policyext.cli import main
from policyext.settings import Settings
from tests.cli.run import RULES

KUBECONFIG = ["--kubeconfig", "/nonexistent/kubeconfig"]  # (serve itself is stood in for)

REPORT_FLAG_CASES: list[tuple[list[str], dict[str, str], tuple[bool, str, float]]] = [
    # flags, environment -> reports, reports_api, reports_per_second
    ([], {}, (False, "wgpolicyk8s.io/v1alpha2", 10.0)),
    (["--reports"], {}, (True, "wgpolicyk8s.io/v1alpha2", 10.0)),
    ([], {"POLICYEXT_REPORTS": "true"}, (True, "wgpolicyk8s.io/v1alpha2", 10.0)),
    (
        ["--reports", "--reports-api", "openreports.io/v1alpha1", "--reports-per-second", "2.5"],
        {},
        (True, "openreports.io/v1alpha1", 2.5),
    ),
    (
        ["--reports"],
        {"POLICYEXT_REPORTS_API": "openreports.io/v1alpha1", "POLICYEXT_REPORTS_PER_SECOND": "3"},
        (True, "openreports.io/v1alpha1", 3.0),
    ),
]


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    REPORT_FLAG_CASES,
    ids=[
        " ".join([*c[0], *(f"{k}={v}" for k, v in c[1].items())]) or "none"
        for c in REPORT_FLAG_CASES
    ],
)
def test_serve_writes_reports_only_with_reports_and_through_the_api_asked_for(
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    env: dict[str, str],
    expected: tuple[bool, str, float],
) -> None:
    for variable in ("POLICYEXT_REPORTS", "POLICYEXT_REPORTS_API", "POLICYEXT_REPORTS_PER_SECOND"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    served: list[Settings] = []
    monkeypatch.setattr(policyext.wsgi, "serve", served.append)
    monkeypatch.setattr("policyext.cli.serve.preflight", lambda _: None)

    assert main(["serve", "--rules", str(RULES), *KUBECONFIG, *flags]) == 0

    [settings] = served
    assert (settings.reports, settings.reports_api, settings.reports_per_second) == expected


REFUSED = {
    # flags -> what the usage error says
    "reports without a cluster": (["--reports"], "--reports needs --kubeconfig or --in-cluster"),
    "an API policyext does not write": (
        [*KUBECONFIG, "--reports", "--reports-api", "wgpolicyk8s.io/v1beta1"],
        "--reports-api must be one of wgpolicyk8s.io/v1alpha2, openreports.io/v1alpha1",
    ),
    "a rate of 0": (
        [*KUBECONFIG, "--reports", "--reports-per-second", "0"],
        "--reports-per-second must be more than 0",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_serve_refuses_reports_it_cannot_write_as_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    flags, said = REFUSED[case]
    for variable in ("POLICYEXT_REPORTS", "POLICYEXT_REPORTS_API", "POLICYEXT_REPORTS_PER_SECOND"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(policyext.wsgi, "serve", lambda _: pytest.fail("served"))
    monkeypatch.setattr("policyext.cli.serve.preflight", lambda _: None)
    assert main(["serve", "--rules", str(RULES), *flags]) == 2
    assert said in capsys.readouterr().err


def test_settings_refuse_an_api_policyext_does_not_write() -> None:
    with pytest.raises(Exception, match="--reports-api must be one of"):
        Settings(rules=[str(RULES)], kubeconfig="k", reports=True, reports_api="v1/PolicyReport")
