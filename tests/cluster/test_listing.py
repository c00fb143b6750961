"""The one-shot listing of `simulate --cluster`, against a small fake API server on loopback:
pages, kinds, the pods counted on their nodes, and a one-line reason for every failure."""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cli import main
from policyext.cluster.client import ClusterSettings, api_clients
from policyext.cluster.listing import ClusterReadError, cluster_snapshot, configmap_rule_texts

POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: p}
spec:
  scores:
  - name: fewest-pods
    expression: "10 - nodeInfo.podCount"
"""


def _node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "resourceVersion": "7"},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "schedulerName": "default-scheduler"}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


@dataclass
class FakeApi:
    """What the fake API server answers: two pages of nodes, a page of pods, one of
    namespaces, a ConfigMap;
    or, for a path prefix in `refuse`, that HTTP status."""

    port: int = 0
    refuse: dict[str, int] = field(default_factory=dict)
    not_json: bool = False
    calls: list[str] = field(default_factory=list)

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, object]:
        self.calls.append(path + ("?continue" if "continue" in query else ""))
        for prefix, status in self.refuse.items():
            if path.startswith(prefix):
                return status, {"kind": "Status", "message": f'cannot touch "{prefix}"'}
        if path == "/api/v1/nodes":
            if "continue" not in query:
                return 200, {"items": [_node("a")], "metadata": {"continue": "page-2"}}
            return 200, {"items": [_node("b")], "metadata": {"resourceVersion": "9"}}
        if path == "/api/v1/pods":
            return 200, {"items": [_pod("busy", "a"), _pod("waiting", None)], "metadata": {}}
        if path == "/api/v1/namespaces":
            shop = {"metadata": {"name": "shop", "labels": {"team": "retail"}}}
            return 200, {"items": [shop], "metadata": {}}
        if path == "/api/v1/namespaces/policyext/configmaps/rules":
            data = {"p.yaml": POLICY, "README.md": "not a policy"}
            return 200, {"metadata": {"name": "rules"}, "data": data}
        return 404, {"kind": "Status", "message": "not found", "reason": "NotFound"}


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    api = FakeApi()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            status, body = api.answer(url.path, urllib.parse.parse_qs(url.query))
            raw = b"<html>proxy</html>" if api.not_json else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield api
    server.shutdown()
    server.server_close()


def _kubeconfig(path: Path, port: int) -> Path:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def kubeconfig(fake_api: FakeApi, tmp_path: Path) -> Path:
    return _kubeconfig(tmp_path / "kubeconfig", fake_api.port)


def _client(kubeconfig: Path) -> Any:
    return api_clients(ClusterSettings(str(kubeconfig)))


def test_the_listing_reads_every_page_and_counts_bound_pods_on_their_nodes(
    fake_api: FakeApi, kubeconfig: Path
) -> None:
    source = cluster_snapshot(_client(kubeconfig))
    assert sorted(source.nodes) == ["a", "b"]
    assert fake_api.calls == [
        "/api/v1/nodes",
        "/api/v1/nodes?continue",
        "/api/v1/pods",
        "/api/v1/namespaces",
    ]
    # the namespaces' labels, for the namespaceSelector of pod affinity
    assert [(n["kind"], n["metadata"]["labels"]) for n in source.namespaces] == [
        ("Namespace", {"team": "retail"})
    ]
    assert {p["kind"] for p in source.pods} == {"Pod"}
    assert source.node_info(source.nodes["a"])["podCount"] == 1
    assert source.node_info(source.nodes["b"])["podCount"] == 0


def test_simulate_cluster_ranks_the_live_nodes(
    kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod("new", None)))
    args = ["simulate", "--rules", str(tmp_path / "p.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    cluster = ["--cluster", "--kubeconfig", str(kubeconfig), "--context", "fake"]
    assert main([*args, *cluster, "--policies-only"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 nodes feasible" in out
    assert out.rstrip().endswith("best node is b (score 10)")


def test_simulate_cluster_reads_the_kubeconfig_kubectl_would(
    kubeconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod("new", None)))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    args = ["simulate", "--rules", str(tmp_path / "p.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    assert main([*args, "--cluster", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"] == "b"


def test_pending_compares_with_the_rules_the_configmap_serves(
    kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "candidate.yaml").write_text(
        POLICY.replace("10 - nodeInfo.podCount", "nodeInfo.podCount")
    )
    args = ["simulate", "--rules", str(tmp_path / "candidate.yaml"), "--pending", "--cluster"]
    configmap = ["--current-configmap", "policyext/rules", "--kubeconfig", str(kubeconfig)]
    assert main([*args, *configmap, "-o", "json"]) == 0
    (waiting,) = json.loads(capsys.readouterr().out)["pods"]
    assert waiting["name"] == "waiting"
    assert (waiting["before"]["best"], waiting["after"]["best"]) == ("b", "a")
    assert waiting["verdict"] == "best node changes"


def test_only_the_yaml_keys_of_the_configmap_are_rules(kubeconfig: Path) -> None:
    texts = configmap_rule_texts(_client(kubeconfig), "policyext", "rules")
    assert list(texts) == ["configmap/policyext/rules/p.yaml"]


@pytest.mark.parametrize(
    ("refuse", "not_json", "says"),
    [
        ({"/api": 401}, False, "refused the kubeconfig's credentials (HTTP 401 Unauthorized)"),
        (
            {"/api/v1/nodes": 403},
            False,
            'needs the permission `list` on `nodes` cluster-wide (the server said: cannot touch "/api/v1/nodes")',
        ),
        ({"/api/v1/pods": 403}, False, "needs the permission `list` on `pods` in all namespaces"),
        (
            {"/api/v1/namespaces": 403},
            False,
            "needs the permission `list` on `namespaces` cluster-wide",
        ),
        ({"/api/v1/nodes": 500}, False, "list nodes cluster-wide at http://127.0.0.1:"),
        ({}, True, "the answer is not JSON"),
    ],
)
def test_a_failed_listing_says_why_in_one_line(
    fake_api: FakeApi, kubeconfig: Path, refuse: dict[str, int], not_json: bool, says: str
) -> None:
    fake_api.refuse = refuse
    fake_api.not_json = not_json
    with pytest.raises(ClusterReadError) as error:
        cluster_snapshot(_client(kubeconfig))
    assert says in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("refuse", "says"),
    [
        ({"/api/v1/namespaces": 403}, "`get` on `configmaps` in namespace policyext"),
        ({"/api/v1/namespaces": 404}, "ConfigMap policyext/rules not found"),
    ],
)
def test_a_configmap_that_cannot_be_read_says_why(
    fake_api: FakeApi, kubeconfig: Path, refuse: dict[str, int], says: str
) -> None:
    fake_api.refuse = refuse
    with pytest.raises(ClusterReadError) as error:
        configmap_rule_texts(_client(kubeconfig), "policyext", "rules")
    assert says in str(error.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("mode", [["--pod", "POD"], ["--pending", "--current", "RULES"]])
def test_an_unreachable_api_server_is_one_line_and_status_1(
    mode: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod("new", None)))
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", _closed_port())
    mode = [
        {"POD": str(tmp_path / "pod.yaml"), "RULES": str(tmp_path / "p.yaml")}.get(m, m)
        for m in mode
    ]
    args = ["simulate", "--rules", str(tmp_path / "p.yaml"), *mode, "--cluster"]
    assert main([*args, "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach the Kubernetes API at http://127.0.0.1:")
    assert "Connection refused" in err
    assert err.count("\n") == 1


def test_a_missing_kubeconfig_is_one_line_and_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.yaml").write_text(POLICY)
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(_pod("new", None)))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    args = ["simulate", "--rules", str(tmp_path / "p.yaml"), "--pod", str(tmp_path / "pod.yaml")]
    assert main([*args, "--cluster"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot load the Kubernetes connection ({tmp_path / 'absent'})")
    assert err.count("\n") == 1
