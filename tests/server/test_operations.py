"""What an operator sees: /healthz, /readyz, /policies, a URL prefix, `policyext serve`
refusing bad input, and `policyext config` giving kube-scheduler a configuration it takes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cli import main
from policyext.policy.compile import PolicySet, load_policy_set
from tests.server.conftest import ServerFactory
from tests.server.harness import (
    RULES,
    ExtenderServer,
    clean_environment,
    free_port,
    policyext_command,
)
from tests.server.kube import fixture_bytes

PREFIX = "/scheduler"
# kubescheduler.config.k8s.io/v1 Extender and ExtenderTLSConfig: the scheduler decodes its
# configuration strictly, so a field outside these is an error at its start
EXTENDER_FIELDS = {
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}
TLS_FIELDS = {
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
}
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return load_policy_set([RULES])


@pytest.fixture(scope="module")
def prefixed(serve: ServerFactory) -> ExtenderServer:
    """The verbs under a URL prefix, and no node source."""
    return serve("--url-prefix", PREFIX, snapshot=None)


# -- health, readiness, policies -------------------------------------------------------------
def test_healthz_says_ok(demo_server: ExtenderServer) -> None:
    reply = demo_server.get("/healthz")
    assert (reply.status, reply.json()) == (200, {"status": "ok"})


def test_readyz_reports_the_policy_version_and_each_check(
    demo_server: ExtenderServer, prefixed: ExtenderServer, policies: PolicySet
) -> None:
    with_source = demo_server.get("/readyz")
    without = prefixed.get("/readyz")
    assert with_source.status == without.status == 200
    assert with_source.json() == {
        "ready": True,
        "policyVersion": policies.version,
        "checks": {"policies": "loaded", "nodeSource": "synced"},
    }
    assert without.json()["checks"] == {"policies": "loaded"}


def _listed_as_written(folder: Path) -> list[dict[str, Any]]:
    """What /policies should list for the policy files of `folder`, read from the YAML as
    written with the defaults of the format (the design's policy-format): a filter's failurePolicy
    is its policy's, Fail when neither says; mode Enforce; weight 1; normalize Clamp."""
    listed = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "SchedulingPolicy":
                continue
            spec = doc["spec"]
            default = spec.get("failurePolicy", "Fail")
            filters = [
                {
                    "name": f["name"],
                    "mode": f.get("mode", "Enforce"),
                    "failurePolicy": f.get("failurePolicy", default),
                }
                for f in spec.get("filters", [])
            ]
            scores = [
                {
                    "name": s["name"],
                    "weight": s.get("weight", 1),
                    "normalize": s.get("normalize", "Clamp"),
                }
                for s in spec.get("scores", [])
            ]
            listed.append({"name": doc["metadata"]["name"], "filters": filters, "scores": scores})
    return sorted(listed, key=lambda policy: policy["name"])


def test_policies_lists_every_rule_with_its_settings(
    demo_server: ExtenderServer, policies: PolicySet
) -> None:
    listing = demo_server.get("/policies").json()
    assert listing["version"] == policies.version
    by_name = sorted(listing["policies"], key=lambda policy: policy["name"])
    assert by_name == _listed_as_written(RULES)
    assert {Path(s).name for s in listing["sources"]} >= {f.name for f in RULES.glob("*.yaml")}
    assert listing["lastReload"]["ok"] is True
    assert listing["lastReload"]["version"] == policies.version
    assert listing["reloads"] == {"ok": 1, "failed": 0}


def test_policies_show_modes_failure_policies_weights_and_normalization(
    demo_server: ExtenderServer,
) -> None:
    by_name = {p["name"]: p for p in demo_server.get("/policies").json()["policies"]}
    assert by_name["maintenance-window"]["filters"][1] == {
        "name": "no-maintenance-soon",
        "mode": "Audit",
        "failurePolicy": "Ignore",
    }
    assert by_name["zone-preference"]["scores"] == [
        {"name": "preferred-zone", "weight": 5, "normalize": "Clamp"}
    ]


# -- URL prefix ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"{PREFIX}/filter", 200),
        (f"{PREFIX}/prioritize", 200),
        ("/filter", 404),
        ("/explain", 400),  # /explain stays at the root; NodeNames without a source is a 400
        (f"{PREFIX}/explain", 404),
    ],
)
def test_the_verbs_move_under_the_url_prefix_and_the_rest_stays_at_the_root(
    prefixed: ExtenderServer, path: str, status: int
) -> None:
    assert prefixed.post(path, fixture_bytes("filter-names.request.json")).status == status


# -- serve refuses to start --------------------------------------------------------------
BROKEN_POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: broken
spec:
  filters:
    - name: typo
      expression: "node.metadata.labels.size() >"
"""
UNKNOWN_FIELD = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: unknown-field
spec:
  filtres: []
"""


def _serve_once(*args: str) -> subprocess.CompletedProcess[str]:
    command = [*policyext_command(), "serve", "--bind", f"127.0.0.1:{free_port()}", *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=clean_environment(), check=False
    )


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("broken.yaml", BROKEN_POLICY, "broken.yaml:8:49: broken/typo:"),
        ("unknown-field.yaml", UNKNOWN_FIELD, "unknown-field.yaml:6:"),
    ],
    ids=["a CEL syntax error", "a field the schema does not know"],
)
def test_serve_refuses_to_start_on_invalid_policies_and_prints_the_issues(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    (tmp_path / name).write_text(text)
    done = _serve_once("--rules", str(tmp_path))
    assert done.returncode == 1
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert "Listening at" not in done.stderr  # gunicorn never started


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--rules", "/nonexistent/policies"], "no such file or directory"),
        (["--tls-cert", "cert.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-key", "key.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-client-ca", "ca.pem"], "--tls-client-ca needs --tls-cert and --tls-key"),
    ],
    ids=[
        "missing rules",
        "a certificate without a key",
        "a key without a certificate",
        "a client CA without a certificate",
    ],
)
def test_serve_refuses_inconsistent_input_with_exit_status_1(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert main(["serve", "--rules", str(RULES), *args]) == 1
    assert says in capsys.readouterr().err


@pytest.mark.parametrize(
    "args", [["--workers", "0"], ["--threads", "many"], ["--max-body", "-1"]], ids=" ".join
)
def test_serve_refuses_counts_that_are_not_positive_whole_numbers_as_a_usage_error(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(["serve", "--rules", str(RULES), *args]) == 2
    assert args[0] in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "give the policies with --rules, --rules-configmap and/or --rules-crd"),
        (["--rules-configmap", "kube-system/policies"], "needs --kubeconfig or --in-cluster"),
        (["--rules-configmap", "policies", "--kubeconfig", "kc"], "NAMESPACE/NAME"),
        (["--rules-crd"], "--rules-crd needs --kubeconfig or --in-cluster"),
        (
            ["--rules", str(RULES), "--replica-namespace", "policyext"],
            "--replica-namespace goes with --rules-crd",
        ),
    ],
    ids=[
        "no policies at all",
        "a ConfigMap without a cluster",
        "a ConfigMap without namespace",
        "SchedulingPolicy objects without a cluster",
        "a replica namespace without the objects",
    ],
)
def test_serve_refuses_policy_sources_it_cannot_use_as_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    monkeypatch.delenv("POLICYEXT_RULES", raising=False)
    assert main(["serve", *args]) == 2
    assert says in capsys.readouterr().err


def test_serve_refuses_a_missing_snapshot_with_a_one_line_message_and_status_1() -> None:
    done = _serve_once("--rules", str(RULES), "--snapshot", "/nonexistent/cluster.yaml")
    assert done.returncode == 1
    assert "/nonexistent/cluster.yaml" in done.stderr
    assert "Traceback" not in done.stderr
    assert "Listening at" not in done.stderr


def test_serve_accepts_a_url_prefix_without_a_leading_slash(
    serve: ServerFactory,
) -> None:
    server = serve("--url-prefix", "scheduler", snapshot=None)
    assert (
        server.post("/scheduler/filter", fixture_bytes("filter-names.request.json")).status == 200
    )


# -- policyext config ----------------------------------------------------------------------
def _config(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(["config", *args]) == 0
    return yaml.safe_load(capsys.readouterr().out)


CONFIG_CASES: list[tuple[list[str], dict[str, Any]]] = [
    (
        [],
        {
            "urlPrefix": "http://127.0.0.1:8888",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "preemptVerb": "preempt",
            "weight": 1,
            "nodeCacheCapable": True,
            "enableHTTPS": False,
            "httpTimeout": "5s",
            "ignorable": False,
        },
    ),
    (
        [
            "--url",
            "http://policyext.kube-system:8888/",
            "--url-prefix",
            "/scheduler",
            "--weight",
            "3",
            "--timeout",
            "1500ms",
            "--bind",
            "--no-preempt",
            "--ignorable",
        ],
        {
            "urlPrefix": "http://policyext.kube-system:8888/scheduler",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "bindVerb": "bind",
            "weight": 3,
            "nodeCacheCapable": True,
            "enableHTTPS": False,
            "httpTimeout": "1500ms",
            "ignorable": True,
        },
    ),
    (
        [
            "--url",
            "https://policyext.kube-system.svc:8443",
            "--ca-file",
            "/etc/policyext/ca.crt",
            "--cert-file",
            "/etc/policyext/client.crt",
            "--key-file",
            "/etc/policyext/client.key",
            "--server-name",
            "policyext.kube-system.svc",
        ],
        {
            "urlPrefix": "https://policyext.kube-system.svc:8443",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "preemptVerb": "preempt",
            "weight": 1,
            "nodeCacheCapable": True,
            "enableHTTPS": True,
            "httpTimeout": "5s",
            "ignorable": False,
            "tlsConfig": {
                "caFile": "/etc/policyext/ca.crt",
                "certFile": "/etc/policyext/client.crt",
                "keyFile": "/etc/policyext/client.key",
                "serverName": "policyext.kube-system.svc",
            },
        },
    ),
]


@pytest.mark.parametrize(
    ("args", "expected"), CONFIG_CASES, ids=["defaults", "bind, no preempt", "mTLS"]
)
def test_config_prints_an_extenders_block_with_exactly_the_fields_kube_scheduler_takes(
    capsys: pytest.CaptureFixture[str], args: list[str], expected: dict[str, Any]
) -> None:
    config = _config(capsys, *args)
    assert list(config) == ["extenders"]
    [extender] = config["extenders"]
    assert extender == expected
    assert set(extender) <= EXTENDER_FIELDS
    assert set(extender.get("tlsConfig", {})) <= TLS_FIELDS
    assert type(extender["weight"]) is int and extender["weight"] >= 1
    assert GO_DURATION.match(extender["httpTimeout"])


def test_config_with_a_scheduler_name_prints_a_whole_kube_scheduler_configuration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _config(capsys, "--scheduler-name", "policy-scheduler")
    assert list(config) == ["apiVersion", "kind", "leaderElection", "profiles", "extenders"]
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"] == [{"schedulerName": "policy-scheduler"}]
    [extender] = config["extenders"]
    assert set(extender) <= EXTENDER_FIELDS


def test_config_refuses_a_weight_kube_scheduler_would_reject(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "--weight", "0"]) == 1
    assert "--weight" in capsys.readouterr().err


def test_the_urls_config_builds_are_the_ones_the_server_answers(
    capsys: pytest.CaptureFixture[str], prefixed: ExtenderServer
) -> None:
    url = f"http://{prefixed.host}:{prefixed.port}"
    [extender] = _config(capsys, "--url", url, "--url-prefix", PREFIX, "--bind")["extenders"]
    for verb in ("filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb"):
        path = extender["urlPrefix"].removeprefix(url) + "/" + extender[verb]
        body = fixture_bytes(
            "bind.request.json" if verb == "bindVerb" else "filter-names.request.json"
        )
        if verb == "preemptVerb":
            body = fixture_bytes("preempt-meta-victims.request.json")
        assert prefixed.post(path, body).status == 200, path


def test_serve_refuses_to_start_when_loading_the_policies_fails_unexpectedly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A load that raises (a bug, or resources exhausted) is a refusal that says so, not a
    traceback that a supervisor would restart into a crash loop."""

    def exhausted(*_args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("policyext.settings.load_policy_set", exhausted)
    assert main(["serve", "--rules", str(RULES)]) == 1
    err = capsys.readouterr().err
    assert "cannot load policies: a value is nested too deeply to load" in err
    assert "Traceback" not in err
