"""The chart as rendered by helm: lint, Kubernetes' own schemas, and what each object says."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_validate import utils as kubernetes_validate

from policyext.cli import main as policyext_main
from policyext.cli.config import extender_config
from tests.chart.chart import (
    CHART,
    CI_VALUES,
    FULLNAME,
    NAMESPACE,
    RELEASE,
    Chart,
    HelmError,
    Rendered,
)

# The Kubernetes version the manifests are checked against: the e2e harness's.
KUBERNETES_VERSION = "1.37"
# Custom resources: no schema in kubernetes-validate, so they are skipped by name.
CUSTOM_RESOURCES = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}
ci_files = pytest.mark.parametrize("values", CI_VALUES, ids=[p.stem for p in CI_VALUES])


def _ci(stem: str) -> Path:
    return CHART / "ci" / f"{stem}-values.yaml"


@ci_files
def test_helm_lint_strict_passes_for_every_ci_values_file(chart: Chart, values: Path) -> None:
    chart.run("lint", "--strict", str(CHART), "--values", str(values))


@ci_files
def test_every_rendered_object_matches_the_kubernetes_schema(chart: Chart, values: Path) -> None:
    rendered = chart.render([values])
    skipped = set()
    for obj in rendered.objects:
        key = (obj["apiVersion"], obj["kind"])
        if key in CUSTOM_RESOURCES:
            skipped.add(key)
            continue
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{values.name}: {name}: {error.message}")
    assert skipped <= CUSTOM_RESOURCES


# --------------------------------------------------------------------------- RBAC
# (the extender's rules per feature: test_security.py)

EXTENDER_SA = FULLNAME
SCHEDULER_SA = f"{FULLNAME}-scheduler"


def _configmap_rule(name: str) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [name],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]


def _bindings(rendered: Rendered) -> set[tuple[str, str, str, str, str]]:
    """(binding kind, its namespace, the role kind, the role name, the ServiceAccount) of
    every binding."""
    found = set()
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in rendered.all(kind):
            (subject,) = binding["subjects"]
            assert (subject["kind"], subject["namespace"]) == ("ServiceAccount", NAMESPACE)
            ref = binding["roleRef"]
            namespace = binding["metadata"].get("namespace", "")
            found.add((kind, namespace, ref["kind"], ref["name"], subject["name"]))
    return found


EXTENDER_BINDING = ("ClusterRoleBinding", "", "ClusterRole", FULLNAME, EXTENDER_SA)
CONFIGMAP_BINDING = ("RoleBinding", NAMESPACE, "Role", f"{FULLNAME}-policies", EXTENDER_SA)
SECOND_SCHEDULER_BINDINGS = {
    ("ClusterRoleBinding", "", "ClusterRole", "system:kube-scheduler", SCHEDULER_SA),
    ("ClusterRoleBinding", "", "ClusterRole", "system:volume-scheduler", SCHEDULER_SA),
    (
        "RoleBinding",
        "kube-system",
        "Role",
        "extension-apiserver-authentication-reader",
        SCHEDULER_SA,
    ),
}
LEASE_BINDING = ("RoleBinding", NAMESPACE, "Role", f"{FULLNAME}-leader-election", SCHEDULER_SA)


@pytest.mark.parametrize(
    ("stem", "configmap", "bindings"),
    [
        ("default", None, {EXTENDER_BINDING, LEASE_BINDING, *SECOND_SCHEDULER_BINDINGS}),
        ("extender", None, {EXTENDER_BINDING}),
        (
            "inline-policies",
            f"{FULLNAME}-policies",
            {EXTENDER_BINDING, CONFIGMAP_BINDING, LEASE_BINDING, *SECOND_SCHEDULER_BINDINGS},
        ),
        (
            "existing-configmap",
            "scheduling-policies",
            {EXTENDER_BINDING, CONFIGMAP_BINDING, LEASE_BINDING, *SECOND_SCHEDULER_BINDINGS},
        ),
        ("leader-election", None, {EXTENDER_BINDING, LEASE_BINDING, *SECOND_SCHEDULER_BINDINGS}),
        ("crd", None, {EXTENDER_BINDING, LEASE_BINDING, *SECOND_SCHEDULER_BINDINGS}),
    ],
)
def test_the_extenders_and_kube_schedulers_rights_go_to_their_own_service_accounts(
    chart: Chart,
    stem: str,
    configmap: str | None,
    bindings: set[tuple[str, str, str, str, str]],
) -> None:
    rendered = chart.render([_ci(stem)])

    assert _bindings(rendered) == bindings
    roles = {r["metadata"]["name"]: r["rules"] for r in rendered.all("Role")}
    if configmap:
        assert roles.pop(f"{FULLNAME}-policies") == _configmap_rule(configmap)
    if LEASE_BINDING in bindings:
        assert roles.pop(f"{FULLNAME}-leader-election") == [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "resourceNames": [FULLNAME],
                "verbs": ["get", "update"],
            },
        ]
    assert roles == {}
    assert rendered.names("ClusterRole") == {FULLNAME}
    accounts = {EXTENDER_SA} if stem == "extender" else {EXTENDER_SA, SCHEDULER_SA}
    assert rendered.names("ServiceAccount") == accounts


@ci_files
def test_no_rule_uses_a_wildcard_or_touches_secrets(chart: Chart, values: Path) -> None:
    rendered = chart.render([values])
    for role in rendered.all("ClusterRole") + rendered.all("Role"):
        for rule in role["rules"]:
            words = [*rule.get("apiGroups", []), *rule["resources"], *rule["verbs"]]
            assert "*" not in words, role["metadata"]["name"]
            assert "secrets" not in rule["resources"], role["metadata"]["name"]


def test_leader_election_uses_the_lease_its_role_names(chart: Chart) -> None:
    rendered = chart.render([_ci("leader-election")])
    election = rendered.scheduler_config()["leaderElection"]
    assert election["leaderElect"] is True
    assert (election["resourceNamespace"], election["resourceName"]) == (NAMESPACE, FULLNAME)
    assert election["resourceLock"] == "leases"


# --------------------------------------------------------------------------- hardening

RESTRICTED = {
    "runAsNonRoot": True,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@ci_files
def test_every_container_is_restricted_probed_and_bounded(chart: Chart, values: Path) -> None:
    rendered = chart.render([values])
    pod = rendered.pod_spec
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        assert container["securityContext"] == RESTRICTED, container["name"]
        assert set(container["resources"]) == {"requests", "limits"}, container["name"]
        if container["name"] == "webhook":
            # restarted when it hangs, but never the reason the pod leaves the verbs' Service
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
            assert "readinessProbe" not in container
            continue
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            assert container[probe]["httpGet"]["path"] == path
    # the read-only root: whatever the extender writes goes to emptyDirs
    mounts = {m["mountPath"] for m in rendered.container("extender")["volumeMounts"]}
    assert {"/tmp", "/var/run/policyext/metrics"} <= mounts


@pytest.mark.parametrize(("stem", "multiprocess"), [("default", False), ("leader-election", True)])
def test_several_workers_share_their_metrics_in_an_empty_dir(
    chart: Chart, stem: str, multiprocess: bool
) -> None:
    extender = chart.render([_ci(stem)]).container("extender")
    env = {e["name"]: e.get("value") for e in extender.get("env", [])}
    if multiprocess:
        assert env["PROMETHEUS_MULTIPROC_DIR"] == "/var/run/policyext/metrics"
    else:
        assert "PROMETHEUS_MULTIPROC_DIR" not in env


def test_a_single_scheduler_without_leader_election_is_replaced_not_rolled(chart: Chart) -> None:
    alone = ["replicaCount=1", "scheduler.leaderElection.enabled=false"]
    assert chart.render([_ci("default")], alone).deployment["spec"]["strategy"] == {
        "type": "Recreate"
    }
    assert chart.render([_ci("leader-election")]).deployment["spec"]["strategy"] == ROLLED
    assert (
        chart.render([_ci("leader-election")]).get("PodDisruptionBudget", FULLNAME)["spec"][
            "minAvailable"
        ]
        == 2
    )


# a new replica ready before an old one leaves
ROLLED = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
SELECTOR = {"app.kubernetes.io/name": "policyext", "app.kubernetes.io/instance": RELEASE}


@pytest.mark.parametrize("mode", ["scheduler", "extender"])
def test_by_default_two_replicas_spread_over_nodes_and_zones_roll_under_a_budget(
    chart: Chart, mode: str
) -> None:
    sets = ["mode=extender", "networkPolicy.enabled=false"] if mode == "extender" else []
    rendered = chart.render([_ci("default")], sets)
    spec = rendered.deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == ROLLED
    assert rendered.get("PodDisruptionBudget", FULLNAME)["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": SELECTOR},
    }
    spread = {
        (c["topologyKey"], c["whenUnsatisfiable"]): c
        for c in spec["template"]["spec"]["topologySpreadConstraints"]
    }
    assert set(spread) == {
        ("kubernetes.io/hostname", "DoNotSchedule"),
        ("topology.kubernetes.io/zone", "ScheduleAnyway"),
    }
    for constraint in spread.values():
        assert constraint["maxSkew"] == 1
        assert constraint["labelSelector"] == {"matchLabels": SELECTOR}
    assert spread["kubernetes.io/hostname", "DoNotSchedule"]["nodeTaintsPolicy"] == "Honor"
    if mode == "scheduler":
        assert rendered.scheduler_config()["leaderElection"]["leaderElect"] is True


def test_the_replicas_spread_as_told_or_not_at_all(chart: Chart) -> None:
    constraints = chart.render([_ci("leader-election")]).pod_spec["topologySpreadConstraints"]
    assert [c["whenUnsatisfiable"] for c in constraints] == ["ScheduleAnyway"]  # the file's
    unspread = chart.render([_ci("default")], ["spreadReplicas=false"]).pod_spec
    assert "topologySpreadConstraints" not in unspread


@pytest.mark.parametrize(("delay", "grace"), [(10, 30), (0, 11), (50, 61)])
def test_the_extender_drains_within_the_grace_period_without_a_pre_stop_hook(
    chart: Chart, delay: int, grace: int
) -> None:
    rendered = chart.render(
        [_ci("default")],
        [f"extender.shutdownDelaySeconds={delay}", f"terminationGracePeriodSeconds={grace}"],
    )
    assert rendered.pod_spec["terminationGracePeriodSeconds"] == grace
    extender = rendered.container("extender")
    assert f"--shutdown-delay={delay}" in extender["args"]
    assert "lifecycle" not in extender


# --------------------------------------------------------------------------- the extender


SERVE = ["--in-cluster", "--bind=127.0.0.1:8888", "--ops-bind=0.0.0.0:8889", "--introspection=off"]
WORKERS = ["--workers=1", "--threads=4", "--log-level=info", "--request-deadline=3.75"]
AUDIT = "--audit-events-per-second=5"
SHUTDOWN = "--shutdown-delay=10"
MOUNTED = "--rules=/etc/policyext/rules"
EXTENDER_SERVE = ["--in-cluster", "--bind=0.0.0.0:8888", *SERVE[2:]]
CLIENT_CERTS = [
    "--tls-cert=/etc/policyext/tls/tls.crt",
    "--tls-key=/etc/policyext/tls/tls.key",
    "--tls-client-ca=/etc/policyext/tls/ca.crt",
    "--tls-client-allow=kube-scheduler",
]


@pytest.mark.parametrize(
    ("stem", "args"),
    [
        ("default", [*SERVE, MOUNTED, *WORKERS, AUDIT, SHUTDOWN]),
        (
            "inline-policies",
            [
                *SERVE,
                f"--rules-configmap={NAMESPACE}/{FULLNAME}-policies",
                *WORKERS,
                AUDIT,
                SHUTDOWN,
            ],
        ),
        (
            "existing-configmap",
            [
                *SERVE,
                f"--rules-configmap={NAMESPACE}/scheduling-policies",
                *WORKERS,
                AUDIT,
                SHUTDOWN,
            ],
        ),
        (
            "extender",
            [
                *EXTENDER_SERVE,
                MOUNTED,
                *WORKERS[:3],
                "--request-deadline=1.5",
                AUDIT,
                SHUTDOWN,
                "--bind-verb",
                "--scheduler-name=default-scheduler",
                "--url-prefix=/policyext",
                *CLIENT_CERTS,
            ],
        ),
        ("tls-secret", [*EXTENDER_SERVE, MOUNTED, *WORKERS, AUDIT, SHUTDOWN, *CLIENT_CERTS]),
        ("tls-cert-manager", [*SERVE, MOUNTED, *WORKERS, AUDIT, SHUTDOWN, *CLIENT_CERTS]),
        ("leader-election", [*SERVE, MOUNTED, "--workers=2", *WORKERS[1:], AUDIT, SHUTDOWN]),
        (
            "crd",
            [*SERVE, "--rules-crd", f"--replica-namespace={NAMESPACE}", *WORKERS, AUDIT, SHUTDOWN],
        ),
    ],
)
def test_the_extender_is_served_with_the_policy_and_tls_flags(
    chart: Chart, stem: str, args: list[str]
) -> None:
    # (the image's entrypoint is `policyext serve`: the chart gives only the flags)
    assert chart.render([_ci(stem)]).container("extender")["args"] == args


def _config_flags(values: dict[str, Any], url: str) -> argparse.Namespace:
    ext, tls = values.get("extender", {}), values.get("tls", {})
    directory, client = "/etc/policyext/tls", "/etc/policyext/client-tls"
    enabled = tls.get("enabled", "auto")
    if enabled == "auto":  # on in extender mode, off beside kube-scheduler (loopback)
        enabled = values.get("mode") == "extender"
    mutual = enabled and tls.get("clientAuth", True)
    return argparse.Namespace(
        url=url,
        url_prefix=ext.get("urlPrefix", ""),
        weight=ext.get("weight", 1),
        timeout=ext.get("httpTimeout", "5s"),
        bind=ext.get("bind", False),
        no_preempt=not ext.get("preempt", True),
        ignorable=ext.get("ignorable", False),
        ca_file=f"{directory}/ca.crt" if enabled else None,
        cert_file=f"{client}/tls.crt" if mutual else None,
        key_file=f"{client}/tls.key" if mutual else None,
        server_name=tls.get("serverName"),
    )


@pytest.mark.parametrize(
    ("stem", "url"),
    [
        ("default", "http://127.0.0.1:8888"),
        ("tls-cert-manager", "https://127.0.0.1:8888"),
        ("extender", "https://10.96.200.10:8888"),
        ("tls-secret", f"https://{FULLNAME}.{NAMESPACE}.svc:8888"),
    ],
)
def test_the_extenders_block_is_what_policyext_config_prints(
    chart: Chart, stem: str, url: str
) -> None:
    values = yaml.safe_load(_ci(stem).read_text()) or {}
    expected = extender_config(_config_flags(values, url))
    if values.get("mode") == "extender":
        notes = chart.notes([_ci(stem)])
        block = notes.split("extenders:\n", 1)[1].split("\n\n", 1)[0]
        assert yaml.safe_load(block) == [expected]
    else:
        config = chart.render([_ci(stem)]).scheduler_config()
        assert config["extenders"] == [expected]
        assert config["profiles"] == [{"schedulerName": "policy-scheduler"}]


def test_policyext_accepts_the_policies_the_chart_ships(chart: Chart, tmp_path: Path) -> None:
    configmap = chart.render([_ci("inline-policies")]).get("ConfigMap", f"{FULLNAME}-policies")
    for name, content in configmap["data"].items():
        (tmp_path / name).write_text(content)

    assert sorted(configmap["data"]) == ["critical-off-spot.yaml", "most-free-cpu.yaml"]
    assert policyext_main(["validate", str(tmp_path)]) == 0


def test_changed_policies_leave_the_pods_alone_and_a_changed_config_restarts_them(
    chart: Chart, tmp_path: Path
) -> None:
    before = chart.render([_ci("inline-policies")])
    policies = before.get("ConfigMap", f"{FULLNAME}-policies")["data"]
    changed = {"policies": {"inline": {**policies, "extra.yaml": policies["most-free-cpu.yaml"]}}}
    after = chart.render(
        [_ci("inline-policies")], values_text=yaml.safe_dump(changed), tmp=tmp_path
    )
    reweighted = chart.render([_ci("inline-policies")], ["extender.weight=3"])

    template = before.deployment["spec"]["template"]
    assert after.get("ConfigMap", f"{FULLNAME}-policies")["data"] != policies
    assert after.deployment["spec"]["template"] == template
    assert reweighted.deployment["spec"]["template"] != template


# --------------------------------------------------------------------------- modes


@pytest.mark.parametrize(
    ("stem", "containers", "kinds"),
    [
        ("default", ["kube-scheduler", "extender"], {"NetworkPolicy"}),
        ("extender", ["extender"], {"Service", "NetworkPolicy"}),
        (
            "observability",
            ["extender"],
            {"Service", "NetworkPolicy", "ServiceMonitor", "PrometheusRule"},
        ),
        (
            "scheduler-observability",
            ["kube-scheduler", "extender"],
            {"Service", "NetworkPolicy", "ServiceMonitor", "PrometheusRule"},
        ),
        ("tls-cert-manager", ["kube-scheduler", "extender"], {"Certificate", "NetworkPolicy"}),
    ],
)
def test_each_mode_renders_its_containers_and_optional_objects(
    chart: Chart, stem: str, containers: list[str], kinds: set[str]
) -> None:
    rendered = chart.render([_ci(stem)])
    optional = {"Service", "NetworkPolicy", "ServiceMonitor", "Certificate", "PrometheusRule"}

    assert [c["name"] for c in rendered.pod_spec["containers"]] == containers
    assert {o["kind"] for o in rendered.objects} & optional == kinds


def test_a_fixed_cluster_ip_is_the_services_and_the_certificates(chart: Chart) -> None:
    rendered = chart.render(
        [_ci("extender")], ["tls.certManager.enabled=true", "tls.certManager.issuerRef.name=ca"]
    )
    assert rendered.get("Service", FULLNAME)["spec"]["clusterIP"] == "10.96.200.10"
    certificate = rendered.get("Certificate", FULLNAME)["spec"]
    assert certificate["ipAddresses"] == ["127.0.0.1", "10.96.200.10"]
    assert "server auth" in certificate["usages"]
    client = rendered.get("Certificate", f"{FULLNAME}-client")["spec"]
    assert (client["commonName"], client["usages"][-1]) == ("kube-scheduler", "client auth")
    assert client["secretName"] == f"{FULLNAME}-client-tls"


def test_the_dashboard_config_map_carries_the_dashboard_file(chart: Chart) -> None:
    rendered = chart.render([_ci("observability")])
    dashboard = rendered.get("ConfigMap", f"{FULLNAME}-dashboard")

    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = (CHART / "dashboards" / "policyext.json").read_text()
    assert dashboard["data"]["policyext.json"] == shipped.rstrip("\n")


def test_the_ci_values_files_cover_every_mode_and_option() -> None:
    combined = [yaml.safe_load(p.read_text()) or {} for p in CI_VALUES]
    modes = {v.get("mode", "scheduler") for v in combined}
    flags = set(
        itertools.chain.from_iterable(
            (f"{k}.{kk}" for kk, vv in v.items() if vv is True) if isinstance(v, dict) else ()
            for values in combined
            for k, v in values.items()
        )
    )
    assert modes == {"scheduler", "extender"}
    assert {
        "networkPolicy.enabled",
        "serviceMonitor.enabled",
        "dashboard.enabled",
        "tls.enabled",
        "policies.watch",
        "policies.crd",
        "prometheusRule.enabled",
        "reports.enabled",
        "reports.installCRD",
    } <= flags


# --------------------------------------------------------------------------- versions, timeouts


@pytest.mark.parametrize(
    ("kube_version", "sets", "image"),
    [
        ("v1.29.0", [], "registry.k8s.io/kube-scheduler:v1.29.0"),
        ("v1.37.2", [], "registry.k8s.io/kube-scheduler:v1.37.2"),
        # providers' suffixes are no tags of the upstream image
        ("v1.31.4-eks-1a2b3c", [], "registry.k8s.io/kube-scheduler:v1.31.4"),
        ("v1.30.2+k3s1", [], "registry.k8s.io/kube-scheduler:v1.30.2"),
        ("v1.31.4", ["scheduler.image.tag=v1.30.9"], "registry.k8s.io/kube-scheduler:v1.30.9"),
    ],
)
def test_kube_scheduler_runs_the_clusters_version_unless_told_otherwise(
    chart: Chart, kube_version: str, sets: list[str], image: str
) -> None:
    rendered = chart.render([_ci("default")], sets, kube_version=kube_version)
    assert rendered.container("kube-scheduler")["image"] == image


@pytest.mark.parametrize(
    ("timeout", "deadline"),
    [("5s", "3.75"), ("2s", "1.5"), ("1s", "0.75"), ("1500ms", "1.125"), ("1m30s", "67.5")],
)
def test_the_request_deadline_is_three_quarters_of_the_schedulers_http_timeout(
    chart: Chart, timeout: str, deadline: str
) -> None:
    rendered = chart.render([_ci("default")], [f"extender.httpTimeout={timeout}"])
    assert f"--request-deadline={deadline}" in rendered.container("extender")["args"]
    assert rendered.scheduler_config()["extenders"][0]["httpTimeout"] == timeout


# --------------------------------------------------------------------------- scraping


def test_the_service_monitor_scrapes_kube_scheduler_with_a_token_in_scheduler_mode(
    chart: Chart,
) -> None:
    rendered = chart.render([_ci("scheduler-observability")])
    endpoints = {
        e["port"]: e for e in rendered.get("ServiceMonitor", FULLNAME)["spec"]["endpoints"]
    }
    ports = {p["name"]: p for p in rendered.get("Service", FULLNAME)["spec"]["ports"]}

    assert set(endpoints) == {"ops", "scheduler"}
    assert (endpoints["ops"]["scheme"], endpoints["ops"]["path"]) == ("http", "/metrics")
    assert ports["ops"] == {"name": "ops", "port": 8889, "targetPort": "ops", "protocol": "TCP"}
    scheduler = endpoints["scheduler"]
    assert (scheduler["scheme"], scheduler["path"]) == ("https", "/metrics")
    assert scheduler["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert ports["scheduler"]["targetPort"] == "scheduler"
    assert ports["scheduler"]["port"] == 10259
    container_ports = {p["name"] for p in rendered.container("kube-scheduler")["ports"]}
    assert "scheduler" in container_ports


@pytest.mark.parametrize(
    ("stem", "sets"),
    [("observability", []), ("scheduler-observability", ["serviceMonitor.scheduler=false"])],
)
def test_without_a_scheduler_to_scrape_only_the_extender_is_scraped(
    chart: Chart, stem: str, sets: list[str]
) -> None:
    rendered = chart.render([_ci(stem)], sets)
    endpoints = rendered.get("ServiceMonitor", FULLNAME)["spec"]["endpoints"]
    assert [e["port"] for e in endpoints] == ["ops"]
    ports = [p["name"] for p in rendered.get("Service", FULLNAME)["spec"]["ports"]]
    assert ports == (["http", "ops"] if stem == "observability" else ["ops"])


# --------------------------------------------------------------------------- no policies


def test_notes_warn_loudly_when_the_empty_policy_set_is_allowed(chart: Chart) -> None:
    empty = chart.notes([_ci("default")])
    given = chart.notes([_ci("inline-policies")])
    assert "WARNING: NO POLICIES" in empty
    assert "WARNING" not in given
    assert "--request-deadline is 3.75s" in given


def test_a_cluster_version_that_is_no_image_tag_asks_for_the_tag(chart: Chart) -> None:
    with pytest.raises(HelmError) as refused:
        chart.render([_ci("default")], kube_version="v1.30")
    assert "set scheduler.image.tag" in str(refused.value)
    rendered = chart.render([_ci("default")], ["scheduler.image.tag=v1.30.1"], kube_version="v1.30")
    assert rendered.container("kube-scheduler")["image"].endswith(":v1.30.1")
