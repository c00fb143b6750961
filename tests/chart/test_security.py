"""The chart's security defaults (issue 43): verbs on loopback or behind mutual TLS, the
operations endpoints on their own port, one identity per container with only the rights its
enabled features use, a NetworkPolicy with a real `from`, introspection off."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.chart.chart import FULLNAME, NAMESPACE, Chart, HelmError, Rendered

ALLOW_EMPTY = "policies.allowEmpty=true"
EXTENDER = "mode=extender"
# extender mode needs to be told who may call it (the control plane's addresses here)
CONTROL_PLANE = "networkPolicy.from[0].ipBlock.cidr=172.16.0.0/28"
EXTENDER_MODE = (EXTENDER, CONTROL_PLANE)
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

Json = dict[str, Any]


def _render(chart: Chart, *sets: str) -> Rendered:
    return chart.render([], [ALLOW_EMPTY, *sets])


def _arg(container: Json, flag: str) -> str | None:
    values = [a.split("=", 1)[1] for a in container["args"] if a.startswith(f"{flag}=")]
    assert len(values) <= 1, f"{flag} given {len(values)} times"
    return values[0] if values else None


def _mounts(container: Json) -> dict[str, str]:
    return {m["mountPath"]: m["name"] for m in container["volumeMounts"]}


def _volumes(rendered: Rendered) -> dict[str, Json]:
    return {v["name"]: v for v in rendered.pod_spec["volumes"]}


# --------------------------------------------------------------------------- listeners


def test_in_scheduler_mode_the_verbs_listen_on_loopback_and_the_probes_on_the_ops_port(
    chart: Chart,
) -> None:
    rendered = _render(chart)
    extender = rendered.container("extender")

    assert _arg(extender, "--bind") == "127.0.0.1:8888"
    assert _arg(extender, "--ops-bind") == "0.0.0.0:8889"
    (entry,) = rendered.scheduler_config()["extenders"]
    assert entry["urlPrefix"] == "http://127.0.0.1:8888"
    # only the ops port is the pod's; the verbs port is not even declared
    assert extender["ports"] == [{"name": "ops", "containerPort": 8889, "protocol": "TCP"}]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert extender[probe]["httpGet"] == {"path": path, "port": "ops", "scheme": "HTTP"}


def test_in_extender_mode_the_verbs_are_on_the_main_port_and_the_ops_on_their_own(
    chart: Chart,
) -> None:
    rendered = _render(
        chart, *EXTENDER_MODE, "serviceMonitor.enabled=true", "extender.opsPort=9100"
    )
    extender = rendered.container("extender")

    assert _arg(extender, "--bind") == "0.0.0.0:8888"
    assert _arg(extender, "--ops-bind") == "0.0.0.0:9100"
    assert {p["name"]: p["containerPort"] for p in extender["ports"]} == {"http": 8888, "ops": 9100}
    # with TLS the operations listener speaks it too, asking no client certificate of the
    # kubelet (which does not check the server's) or of the scraper (which does)
    assert extender["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "ops",
        "scheme": "HTTPS",
    }
    ports = {p["name"]: p["targetPort"] for p in rendered.get("Service", FULLNAME)["spec"]["ports"]}
    assert ports == {"http": "http", "ops": "ops"}
    (endpoint,) = rendered.get("ServiceMonitor", FULLNAME)["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["scheme"]) == ("ops", "https")
    assert endpoint["tlsConfig"] == {
        "serverName": f"{FULLNAME}.{NAMESPACE}.svc",
        "ca": {"secret": {"name": f"{FULLNAME}-tls", "key": "ca.crt"}},
    }
    insecure = _render(chart, *EXTENDER_MODE, "tls.enabled=false", "tls.insecure=true")
    assert insecure.container("extender")["livenessProbe"]["httpGet"]["scheme"] == "HTTP"


@pytest.mark.parametrize(
    ("sets", "introspection"),
    [([], "off"), ([*EXTENDER_MODE], "off"), (["extender.introspection=true"], "on")],
)
def test_introspection_is_off_unless_asked_for(
    chart: Chart, sets: list[str], introspection: str
) -> None:
    extender = _render(chart, *sets).container("extender")
    assert _arg(extender, "--introspection") == introspection
    # on, it is served where the operations endpoints are: never beside the verbs
    assert _arg(extender, "--ops-bind") == "0.0.0.0:8889"


# --------------------------------------------------------------------------- identities


def test_the_extender_mounts_its_own_token_and_the_pod_mounts_none_by_default(
    chart: Chart,
) -> None:
    rendered = _render(chart)
    pod = rendered.pod_spec
    volumes = _volumes(rendered)

    assert pod["serviceAccountName"] == f"{FULLNAME}-scheduler"
    assert pod["automountServiceAccountToken"] is False
    # kube-scheduler: the pod's (its) ServiceAccount, as a projected, expiring token
    scheduler_volume = volumes[_mounts(rendered.container("kube-scheduler"))[TOKEN_DIR]]
    sources = scheduler_volume["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}
    assert {"configMap", "downwardAPI"} <= {k for s in sources for k in s}
    # the extender: its own ServiceAccount's token Secret, at the path in-cluster config reads
    extender_volume = volumes[_mounts(rendered.container("extender"))[TOKEN_DIR]]
    secret_name = extender_volume["secret"]["secretName"]
    assert [i["key"] for i in extender_volume["secret"]["items"]] == [
        "token",
        "ca.crt",
        "namespace",
    ]
    secret = rendered.get("Secret", secret_name)
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": FULLNAME}
    accounts = {a["metadata"]["name"]: a for a in rendered.all("ServiceAccount")}
    assert set(accounts) == {FULLNAME, f"{FULLNAME}-scheduler"}
    assert all(a["automountServiceAccountToken"] is False for a in accounts.values())
    # no container sees the other's token
    for name in ("kube-scheduler", "extender"):
        other = "extender" if name == "kube-scheduler" else "kube-scheduler"
        mounted = set(_mounts(rendered.container(name)).values())
        assert _mounts(rendered.container(other))[TOKEN_DIR] not in mounted


def test_in_extender_mode_the_pod_runs_as_the_extenders_service_account(chart: Chart) -> None:
    rendered = _render(chart, *EXTENDER_MODE)
    assert rendered.pod_spec["serviceAccountName"] == FULLNAME
    assert rendered.names("ServiceAccount") == {FULLNAME}
    assert all(s["type"] != "kubernetes.io/service-account-token" for s in rendered.all("Secret"))


NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]}
PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}
PODS_READ = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
BINDING = {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}
EVENTS = {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}
CONFIGMAP = {
    "apiGroups": [""],
    "resources": ["configmaps"],
    "resourceNames": [f"{FULLNAME}-policies"],
    "verbs": ["get", "list", "watch"],
}
OBJECTS = {
    "apiGroups": ["policyext.io"],
    "resources": ["schedulingpolicies"],
    "verbs": ["list", "watch"],
}
# server-side apply of each replica's view: a patch, never an update
OBJECTS_STATUS = {
    "apiGroups": ["policyext.io"],
    "resources": ["schedulingpolicies/status"],
    "verbs": ["patch"],
}
NO_AUDIT = "extender.auditEventsPerSecond=0"
BIND = "extender.bind=true"
WATCH = ["policies.mount=false", "policies.watch=true"]


@pytest.mark.parametrize(
    ("sets", "cluster_rules", "namespace_rules"),
    [
        # the caches only
        ([NO_AUDIT], [NODES, PODS], None),
        # Audit Events on the pods' namespaces, reading a pending pod first (the default: 5
        # a second)
        ([], [NODES, PODS_READ, EVENTS], None),
        (["extender.auditEventsPerSecond=1"], [NODES, PODS_READ, EVENTS], None),
        # binding, reading a pending pod first
        ([NO_AUDIT, BIND], [NODES, PODS_READ, BINDING], None),
        ([BIND], [NODES, PODS_READ, BINDING, EVENTS], None),
        # the policy ConfigMap by name, and Events about it in its namespace
        ([NO_AUDIT, *WATCH], [NODES, PODS], [CONFIGMAP, EVENTS]),
        ([BIND, *WATCH], [NODES, PODS_READ, BINDING, EVENTS], [CONFIGMAP, EVENTS]),
        ([*EXTENDER_MODE, NO_AUDIT], [NODES, PODS], None),
        # the SchedulingPolicy objects, and their status
        ([NO_AUDIT, "policies.crd=true"], [NODES, PODS, OBJECTS, OBJECTS_STATUS], None),
        (
            [BIND, *WATCH, "policies.crd=true"],
            [NODES, PODS_READ, BINDING, EVENTS, OBJECTS, OBJECTS_STATUS],
            [CONFIGMAP, EVENTS],
        ),
        (
            [*EXTENDER_MODE, BIND, *WATCH],
            [NODES, PODS_READ, BINDING, EVENTS],
            [CONFIGMAP, EVENTS],
        ),
    ],
)
def test_the_extenders_rules_are_exactly_what_its_enabled_features_use(
    chart: Chart, sets: list[str], cluster_rules: list[Json], namespace_rules: list[Json] | None
) -> None:
    rendered = _render(chart, *sets)

    assert rendered.get("ClusterRole", FULLNAME)["rules"] == cluster_rules
    roles = {r["metadata"]["name"]: r for r in rendered.all("Role")}
    if namespace_rules is None:
        assert f"{FULLNAME}-policies" not in roles
    else:
        role = roles[f"{FULLNAME}-policies"]
        assert (role["metadata"]["namespace"], role["rules"]) == (NAMESPACE, namespace_rules)
    # and the extender runs with what the rules allow
    extender = rendered.container("extender")
    assert ("--bind-verb" in extender["args"]) is (BIND in sets)
    assert ("--rules-crd" in extender["args"]) is (OBJECTS in cluster_rules)
    audit = float(_arg(extender, "--audit-events-per-second") or "nan")
    assert (audit > 0) is (EVENTS in cluster_rules)


@pytest.mark.parametrize(
    ("sets", "names"),
    [
        ([BIND], "policy-scheduler"),
        ([BIND, "scheduler.name=team"], "team"),
        ([BIND, *EXTENDER_MODE], "default-scheduler"),
        (
            [BIND, *EXTENDER_MODE, "extender.schedulerNames={default-scheduler,batch}"],
            "default-scheduler,batch",
        ),
        ([], None),
    ],
)
def test_the_bind_verb_binds_only_the_pods_of_the_schedulers_that_call_it(
    chart: Chart, sets: list[str], names: str | None
) -> None:
    rendered = _render(chart, *sets)
    assert _arg(rendered.container("extender"), "--scheduler-name") == names
    if not rendered.all("ConfigMap") or EXTENDER in sets:
        return
    (entry,) = rendered.scheduler_config()["extenders"]
    assert ("bindVerb" in entry) is (names is not None)


def test_kube_schedulers_service_account_keeps_what_a_second_scheduler_needs(chart: Chart) -> None:
    rendered = _render(chart)
    roles = {
        b["roleRef"]["name"]
        for kind in ("ClusterRoleBinding", "RoleBinding")
        for b in rendered.all(kind)
        if b["subjects"][0]["name"] == f"{FULLNAME}-scheduler"
    }
    assert roles == {
        "system:kube-scheduler",
        "system:volume-scheduler",
        "extension-apiserver-authentication-reader",
        f"{FULLNAME}-leader-election",
    }


# --------------------------------------------------------------------------- NetworkPolicy


def _ingress(rendered: Rendered) -> list[tuple[set[str], list[Json] | None]]:
    policy = rendered.get("NetworkPolicy", FULLNAME)["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    return [({p["port"] for p in rule["ports"]}, rule.get("from")) for rule in policy["ingress"]]


MONITORING = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
SCHEDULER_POD = [
    {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "scheduling"}},
        "podSelector": {"matchLabels": {"app": "my-scheduler"}},
    }
]


def test_the_network_policy_is_on_by_default_and_no_ingress_reaches_the_loopback_verbs(
    chart: Chart,
) -> None:
    # scheduler mode: the operations port and kube-scheduler's, from the monitoring namespace
    assert _ingress(_render(chart)) == [({"ops", "scheduler"}, MONITORING)]


def test_in_extender_mode_the_verbs_port_admits_only_the_peers_named_for_the_scheduler(
    chart: Chart, tmp_path: Path
) -> None:
    # the control plane's addresses (a scheduler on the host network)
    assert _ingress(_render(chart, *EXTENDER_MODE)) == [
        ({"http"}, [{"ipBlock": {"cidr": "172.16.0.0/28"}}]),
        ({"ops"}, MONITORING),
    ]
    # or a selector, for a scheduler that runs as an ordinary pod
    values = yaml.safe_dump({"mode": "extender", "networkPolicy": {"from": SCHEDULER_POD}})
    rendered = chart.render([], [ALLOW_EMPTY], values_text=values, tmp=tmp_path)
    assert _ingress(rendered)[0] == ({"http"}, SCHEDULER_POD)


def test_extender_mode_is_refused_until_told_who_may_call_it(chart: Chart) -> None:
    with pytest.raises(HelmError) as refused:
        _render(chart, EXTENDER)
    message = str(refused.value)
    assert "networkPolicy.from is empty in extender mode" in message
    assert "ipBlock" in message and "networkPolicy.enabled=false" in message
    assert not _render(chart, EXTENDER, "networkPolicy.enabled=false").all("NetworkPolicy")


# --------------------------------------------------------------------------- TLS


def _certificate(secret: Json, key: str = "tls.crt") -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


def _signed_by(certificate: x509.Certificate, issuer: x509.Certificate) -> bool:
    public = issuer.public_key()
    assert isinstance(public, rsa.RSAPublicKey | ec.EllipticCurvePublicKey)
    hash_algorithm = certificate.signature_hash_algorithm
    assert hash_algorithm is not None
    try:
        if isinstance(public, rsa.RSAPublicKey):
            public.verify(
                certificate.signature,
                certificate.tbs_certificate_bytes,
                padding.PKCS1v15(),
                hash_algorithm,
            )
        else:
            public.verify(
                certificate.signature, certificate.tbs_certificate_bytes, ec.ECDSA(hash_algorithm)
            )
    except InvalidSignature:
        return False
    return True


def test_extender_mode_serves_mutual_tls_with_the_allow_list_and_certificates_of_its_own(
    chart: Chart,
) -> None:
    rendered = _render(chart, *EXTENDER_MODE, "service.clusterIP=10.96.0.50")
    extender = rendered.container("extender")

    assert _arg(extender, "--tls-client-ca") == "/etc/policyext/tls/ca.crt"
    assert _arg(extender, "--tls-client-allow") == "kube-scheduler"
    (entry,) = _notes_extenders(chart)
    assert entry["enableHTTPS"] is True
    assert entry["tlsConfig"]["certFile"] == "/etc/policyext/client-tls/tls.crt"

    server = rendered.get("Secret", f"{FULLNAME}-tls")
    client = rendered.get("Secret", f"{FULLNAME}-client-tls")
    ca = _certificate(server, "ca.crt")
    served, presented = _certificate(server), _certificate(client)
    assert _signed_by(served, ca) and _signed_by(presented, ca)
    assert _certificate(client, "ca.crt") == ca
    names = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"{FULLNAME}.{NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {
        "127.0.0.1",
        "10.96.0.50",
    }
    # the client certificate carries the name the allow-list admits
    (common_name,) = presented.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert common_name.value == "kube-scheduler"
    usages = presented.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usages


def _notes_extenders(chart: Chart) -> list[Json]:
    notes = chart.notes([], [ALLOW_EMPTY, *EXTENDER_MODE, "service.clusterIP=10.96.0.50"])
    extenders: list[Json] = yaml.safe_load(notes.split("extenders:\n", 1)[1].split("\n\n", 1)[0])
    return extenders


@pytest.mark.parametrize(
    ("sets", "allow"),
    [
        (
            ["tls.clientAllow={kube-scheduler,system:kube-scheduler}"],
            "kube-scheduler,system:kube-scheduler",
        ),
        (["tls.clientAllow=null", "tls.insecure=true"], None),
    ],
)
def test_the_allow_list_is_the_extenders_and_names_the_client_certificate(
    chart: Chart, sets: list[str], allow: str | None
) -> None:
    rendered = _render(chart, *EXTENDER_MODE, *sets)
    assert _arg(rendered.container("extender"), "--tls-client-allow") == allow
    (common_name,) = _certificate(
        rendered.get("Secret", f"{FULLNAME}-client-tls")
    ).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert common_name.value == "kube-scheduler"


def test_with_tls_beside_kube_scheduler_it_presents_the_client_certificate(chart: Chart) -> None:
    rendered = _render(chart, "tls.enabled=true")
    scheduler_mounts = _mounts(rendered.container("kube-scheduler"))
    volumes = _volumes(rendered)

    # kube-scheduler gets the CA to check the extender with, never the extender's key
    ca_volume = volumes[scheduler_mounts["/etc/policyext/tls"]]["secret"]
    assert (ca_volume["secretName"], ca_volume["items"]) == (
        f"{FULLNAME}-tls",
        [{"key": "ca.crt", "path": "ca.crt"}],
    )

    client_volume = volumes[scheduler_mounts["/etc/policyext/client-tls"]]
    assert client_volume["secret"]["secretName"] == f"{FULLNAME}-client-tls"
    tls = rendered.scheduler_config()["extenders"][0]["tlsConfig"]
    assert tls["certFile"] == "/etc/policyext/client-tls/tls.crt"
    assert tls["caFile"] == "/etc/policyext/tls/ca.crt"
    assert rendered.scheduler_config()["extenders"][0]["urlPrefix"] == "https://127.0.0.1:8888"
    # an existing Secret serves both ends unless a client Secret of its own is given
    existing = _render(chart, "tls.enabled=true", "tls.existingSecret=mine")
    assert _volumes(existing)["client-tls"]["secret"]["secretName"] == "mine"
    own = _render(
        chart, "tls.enabled=true", "tls.existingSecret=mine", "tls.existingClientSecret=theirs"
    )
    assert _volumes(own)["client-tls"]["secret"]["secretName"] == "theirs"
    assert not own.all("Secret") or all(
        s["type"] == "kubernetes.io/service-account-token" for s in own.all("Secret")
    )


@pytest.mark.parametrize(("sets", "flag"), [([], None), (["extender.maxConnections=64"], "64")])
def test_a_connection_limit_is_passed_only_when_set(
    chart: Chart, sets: list[str], flag: str | None
) -> None:
    assert _arg(_render(chart, *sets).container("extender"), "--max-connections") == flag
