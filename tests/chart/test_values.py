"""values.schema.json and the template checks refuse bad values with a clear message; the
chart's README documents every value."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.chart.chart import CHART, Chart, HelmError

ALLOW_EMPTY = "policies.allowEmpty=true"
CONTROL_PLANE = "networkPolicy.from[0].ipBlock.cidr=172.16.0.0/28"


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["mode=daemon"], "at '/mode': value must be one of 'scheduler', 'extender'"),
        (["replicaCount=0"], "at '/replicaCount': minimum: got 0, want 1"),
        (["extender.weight=0"], "at '/extender/weight': minimum: got 0, want 1"),
        (["extender.httpTimeout=5"], "at '/extender/httpTimeout': got number, want string"),
        (["extender.httpTimeout=five"], "at '/extender/httpTimeout': 'five' does not match"),
        (["extender.logLevel=loud"], "at '/extender/logLevel': value must be one of"),
        (["extender.workers=0"], "at '/extender/workers': minimum: got 0, want 1"),
        (["extender.port=70000"], "at '/extender/port': maximum: got 70,000, want 65,535"),
        (["extender.wieght=2"], "at '/extender': additional properties 'wieght' not allowed"),
        (["scheduler.name=Policy_Scheduler"], "at '/scheduler/name': 'Policy_Scheduler' does not"),
        (["service.clusterIP=ten.0.0.1"], "at '/service/clusterIP': 'ten.0.0.1' does not match"),
        (["policies.inline.policy\\.json=x"], "invalid propertyName 'policy.json'"),
        (
            ["containerSecurityContext.readOnlyRootFilesystem=false"],
            "at '/containerSecurityContext/readOnlyRootFilesystem': value must be true",
        ),
        (
            ["containerSecurityContext.allowPrivilegeEscalation=true"],
            "at '/containerSecurityContext/allowPrivilegeEscalation': value must be false",
        ),
        (["podSecurityContext.runAsUser=0"], "at '/podSecurityContext/runAsUser': minimum"),
        (["tls.certManager.issuerRef.kind=Vault"], "at '/tls/certManager/issuerRef/kind'"),
        (
            ["scheduler.leaderElection.enabled=false"],
            "replicaCount is 2 but scheduler.leaderElection.enabled is false",
        ),
        (
            ["terminationGracePeriodSeconds=20"],
            "terminationGracePeriodSeconds is 20 but the extender drains for "
            "extender.shutdownDelaySeconds (10 s) and then gives its calls in flight 10 s",
        ),
        (["extender.shutdownDelaySeconds=-1"], "at '/extender/shutdownDelaySeconds': minimum"),
        (
            ["policies.mount=false"],
            "policies.mount, policies.watch and policies.crd are all false",
        ),
        (
            [
                "policies.existingConfigMap=mine",
                "policies.inline.a\\.yaml=x",
                "policies.mount=true",
            ],
            "policies.inline and policies.existingConfigMap are both set",
        ),
        (
            ["policies.watch=true"],
            "policies.mount and policies.watch are both true",
        ),
        (["tls.enabled=maybe"], "at '/tls/enabled': value must be one of 'auto', true, false"),
        (["mode=extender", "tls.enabled=false"], "tls.enabled is false in extender mode"),
        (["mode=extender", "tls.clientAuth=false"], "tls.clientAuth is false in extender mode"),
        (["mode=extender", "tls.clientAllow=null"], "tls.clientAllow is empty"),
        (["tls.enabled=true", "tls.clientAllow=null"], "tls.clientAllow is empty"),
        ([r"tls.clientAllow={a\,b}"], "at '/tls/clientAllow/0'"),
        (["mode=extender"], "networkPolicy.from is empty in extender mode"),
        (["extender.opsPort=8888"], "extender.port and extender.opsPort are both 8888"),
        (["extender.opsPort=10259"], "extender.opsPort and scheduler.port are both 10259"),
        (["extender.schedulerNames={a}"], "extender.schedulerNames is set but extender.bind"),
        (["extender.auditEventsPerSecond=-1"], "at '/extender/auditEventsPerSecond': minimum"),
        (
            ["tls.enabled=true", "tls.existingSecret=s", "tls.certManager.enabled=true"],
            "tls.existingSecret and tls.certManager.enabled are both set",
        ),
        (
            ["tls.enabled=true", "tls.certManager.enabled=true"],
            "tls.certManager.enabled needs tls.certManager.issuerRef.name",
        ),
        (
            ["podDisruptionBudget.minAvailable=1"],
            "podDisruptionBudget.minAvailable and podDisruptionBudget.maxUnavailable are both set",
        ),
        (["service.clusterIP=10.0.0.9"], "service.clusterIP is set in scheduler mode"),
        (["extender.httpTimeout=500ms"], "extender.httpTimeout is 500ms: at least 1s"),
        (["prometheusRule.enabled=true"], "prometheusRule.enabled needs serviceMonitor.enabled"),
        (
            ["prometheusRule.latencyShareOfTimeout=2"],
            "at '/prometheusRule/latencyShareOfTimeout': maximum",
        ),
        (["scheduler.image.tag=v1 .2"], "at '/scheduler/image/tag'"),
    ],
)
def test_bad_values_are_refused_with_a_message_that_names_them(
    chart: Chart, sets: list[str], message: str
) -> None:
    with pytest.raises(HelmError) as refused:
        chart.render([], [ALLOW_EMPTY, *sets])
    assert message in str(refused.value)


def test_no_policies_at_all_are_refused_unless_allowed_explicitly(chart: Chart) -> None:
    with pytest.raises(HelmError) as refused:
        chart.render()
    assert "no policies: neither policies.inline nor policies.existingConfigMap" in str(
        refused.value
    )
    assert "policies.allowEmpty=true" in str(refused.value)
    assert chart.render([], [ALLOW_EMPTY]).deployment
    assert chart.render([], ["policies.existingConfigMap=mine"]).deployment
    # the SchedulingPolicy objects are the policies: none need be given to the chart
    assert chart.render([], ["policies.crd=true", "policies.mount=false"]).deployment


@pytest.mark.parametrize(
    "sets",
    [
        ["replicaCount=2", "scheduler.leaderElection.enabled=true"],
        ["replicaCount=1", "scheduler.leaderElection.enabled=false"],
        ["mode=extender", "replicaCount=3", "networkPolicy.enabled=false"],
        ["policies.mount=false", "policies.watch=true"],
        ["policies.mount=false", "policies.watch=true", "policies.crd=true"],
        ["podDisruptionBudget.maxUnavailable=", "podDisruptionBudget.minAvailable=50%"],
        ["tls.enabled=true", "tls.existingSecret=mine", "tls.clientAuth=false"],
        # the acknowledgements: each unsafe choice in extender mode, made on purpose
        ["mode=extender", "tls.enabled=false", "tls.insecure=true", CONTROL_PLANE],
        ["mode=extender", "tls.clientAuth=false", "tls.insecure=true", CONTROL_PLANE],
        ["mode=extender", "tls.clientAllow=null", "tls.insecure=true", CONTROL_PLANE],
        ["mode=extender", "networkPolicy.enabled=false"],
        ["mode=extender", CONTROL_PLANE],
        ["extender.bind=true", "extender.schedulerNames={a,b}"],
    ],
)
def test_good_combinations_render(chart: Chart, sets: list[str]) -> None:
    assert chart.render([], [ALLOW_EMPTY, *sets]).deployment


def _leaves(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{path}.")
        else:
            yield path


def test_the_readme_documents_every_value() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    readme = (CHART / "README.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, re.M))

    leaves = set(_leaves(values))
    assert leaves - documented == set(), "values missing from the README"
    assert documented - leaves == set(), "the README documents values that do not exist"
