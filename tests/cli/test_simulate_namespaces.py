"""The namespaceSelector of pod (anti-)affinity in `simulate` and `explain`: matched against
the labels of the snapshot's Namespaces, as kube-scheduler's namespace lister has them, and
against each namespace's name label alone (said in one line) when the snapshot has none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cli import main

HOSTNAME = "kubernetes.io/hostname"
NAME_LABEL = "kubernetes.io/metadata.name"
POLICY = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata: {name: p}
spec:
  scores:
  - name: fewest-pods
    expression: "10 - nodeInfo.podCount"
"""
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"


def _node(name: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    # the API server gives every namespace its name label
    return {"kind": "Namespace", "metadata": {"name": name, "labels": {NAME_LABEL: name, **labels}}}


def _pod(
    name: str, namespace: str, app: str, node: str | None = None, **affinity: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _required(app: str, namespace_selector: object) -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": app}},
                "namespaceSelector": namespace_selector,
                "topologyKey": HOSTNAME,
            }
        ]
    }


# a cache in shop (team retail) runs on a, one in ads (team marketing) on b
RUNNING = [
    _pod("cache", "shop", "cache", "a"),
    _pod("cache", "ads", "cache", "b"),
]
NAMESPACES = [
    _namespace("shop", team="retail"),
    _namespace("ads", team="marketing"),
    _namespace("web", tier="frontend"),
]
RETAIL = {"matchLabels": {"team": "retail"}}


def _simulate(
    tmp_path: Path, pod: dict[str, Any], objects: list[dict[str, Any]], *extra: str
) -> list[str]:
    snapshot = {"apiVersion": "v1", "kind": "List", "items": [_node("a"), _node("b"), *objects]}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(snapshot))
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    (tmp_path / "p.yaml").write_text(POLICY)
    return [
        "simulate",
        *("--rules", str(tmp_path / "p.yaml")),
        *("--pod", str(tmp_path / "pod.yaml")),
        *("--snapshot", str(tmp_path / "cluster.yaml")),
        *extra,
    ]


def _rejections(out: str) -> dict[str, tuple[str, ...]]:
    """Per node, the reasons the emulated scheduler rejected it for (none: accepted)."""
    rejections: dict[str, tuple[str, ...]] = {}
    for node in json.loads(out)["nodes"]:
        rejection = node["scheduler"]["rejection"]
        rejections[node["name"]] = tuple(rejection["reasons"]) if rejection else ()
    return rejections


def _scores(out: str, plugin: str) -> dict[str, int]:
    scores: dict[str, int] = {}
    for node in json.loads(out)["nodes"]:
        for score in node["scheduler"]["scores"]:
            if score["plugin"] == plugin:
                scores[node["name"]] = score["score"]
    return scores


@pytest.mark.parametrize(
    ("pod", "objects", "rejections"),
    [
        pytest.param(
            _pod("web", "web", "web", podAntiAffinity=_required("cache", RETAIL)),
            [*RUNNING, *NAMESPACES],
            {"a": (ANTI,), "b": ()},
            id="anti-affinity to the pods of the namespaces a label selects",
        ),
        pytest.param(
            _pod("web", "web", "web", podAntiAffinity=_required("cache", {})),
            [*RUNNING, *NAMESPACES],
            {"a": (ANTI,), "b": (ANTI,)},
            id="an empty namespaceSelector selects every namespace",
        ),
        pytest.param(
            _pod(
                "web",
                "web",
                "web",
                podAntiAffinity={
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "cache"}},
                            "namespaces": ["ads"],
                            "namespaceSelector": RETAIL,
                            "topologyKey": HOSTNAME,
                        }
                    ]
                },
            ),
            [*RUNNING, *NAMESPACES],
            {"a": (ANTI,), "b": (ANTI,)},
            id="the namespaces listed and those selected together",
        ),
        pytest.param(
            _pod(
                "web",
                "web",
                "web",
                podAffinity=_required("cache", {"matchLabels": {"team": "marketing"}}),
            ),
            [*RUNNING, *NAMESPACES],
            {"a": (AFFINITY,), "b": ()},
            id="affinity to the pods of the namespaces a label selects",
        ),
        pytest.param(
            _pod("web", "web", "web"),
            [
                _pod(
                    "cache",
                    "shop",
                    "cache",
                    "a",
                    podAntiAffinity=_required("web", {"matchLabels": {"tier": "frontend"}}),
                ),
                _pod(
                    "cache",
                    "ads",
                    "cache",
                    "b",
                    podAntiAffinity=_required("web", {"matchLabels": {"tier": "backend"}}),
                ),
                *NAMESPACES,
            ],
            {"a": (EXISTING_ANTI,), "b": ()},
            id="a running pod's anti-affinity selects the new pod's namespace by its labels",
        ),
        pytest.param(
            _pod("web", "gone", "web"),
            [
                _pod(
                    "cache",
                    "shop",
                    "cache",
                    "a",
                    podAntiAffinity=_required(
                        "web", {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}
                    ),
                ),
                *NAMESPACES,
            ],
            {"a": (EXISTING_ANTI,), "b": ()},
            id="a namespace without its Namespace object has no labels",
        ),
    ],
)
def test_a_namespace_selector_matches_the_labels_of_the_snapshots_namespaces(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pod: dict[str, Any],
    objects: list[dict[str, Any]],
    rejections: dict[str, tuple[str, ...]],
) -> None:
    assert main([*_simulate(tmp_path, pod, objects), "-o", "json"]) == 0
    out = capsys.readouterr().out
    assert _rejections(out) == rejections
    scheduler = json.loads(out)["scheduler"]
    assert (scheduler["namespacesKnown"], scheduler["namespaceLabelsAssumed"]) == (True, False)


def test_a_preferred_term_scores_the_nodes_of_the_namespaces_it_selects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preferred = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 50,
                "podAffinityTerm": _required("cache", RETAIL)[
                    "requiredDuringSchedulingIgnoredDuringExecution"
                ][0],
            }
        ]
    }
    pod = _pod("web", "web", "web", podAffinity=preferred)
    assert main([*_simulate(tmp_path, pod, [*RUNNING, *NAMESPACES]), "-o", "json"]) == 0
    assert _scores(capsys.readouterr().out, "InterPodAffinity") == {"a": 100, "b": 0}


def test_without_namespaces_a_selector_sees_only_the_name_label_and_simulate_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_label = _pod("web", "web", "web", podAntiAffinity=_required("cache", RETAIL))
    assert main(_simulate(tmp_path, by_label, RUNNING)) == 0
    out = capsys.readouterr().out
    assert (
        "  namespaces: none known, so a namespaceSelector matches a namespace by its name label "
        "(kubernetes.io/metadata.name) alone; save them too: "
        "kubectl get nodes,pods,namespaces -A -o yaml\n"
    ) in out
    assert "2 of 2 nodes feasible" in out  # team=retail is no label a namespace is assumed to have

    by_name = _pod(
        "web",
        "web",
        "web",
        podAntiAffinity=_required("cache", {"matchLabels": {NAME_LABEL: "shop"}}),
    )
    assert main([*_simulate(tmp_path, by_name, RUNNING), "-o", "json"]) == 0
    out = capsys.readouterr().out
    assert _rejections(out) == {"a": (ANTI,), "b": ()}
    scheduler = json.loads(out)["scheduler"]
    assert (scheduler["namespacesKnown"], scheduler["namespaceLabelsAssumed"]) == (False, True)


@pytest.mark.parametrize(
    ("pod", "objects", "noted"),
    [
        pytest.param(_pod("web", "web", "web"), RUNNING, False, id="no selector anywhere"),
        pytest.param(
            _pod("web", "web", "web"),
            [_pod("cache", "shop", "cache", "a", podAntiAffinity=_required("web", RETAIL))],
            True,
            id="a running pod's selector",
        ),
        pytest.param(
            _pod("web", "web", "web", podAntiAffinity=_required("cache", RETAIL)),
            [*RUNNING, *NAMESPACES],
            False,
            id="the namespaces are known",
        ),
    ],
)
def test_the_assumption_is_noted_only_when_a_selector_met_unknown_namespaces(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pod: dict[str, Any],
    objects: list[dict[str, Any]],
    noted: bool,
) -> None:
    assert main(_simulate(tmp_path, pod, objects)) == 0
    assert ("namespaces: none known" in capsys.readouterr().out) is noted


def test_explain_matches_a_namespace_selector_against_the_snapshots_namespaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = _pod("web", "web", "web", podAntiAffinity=_required("cache", RETAIL))
    args = _simulate(tmp_path, pending, [*RUNNING, *NAMESPACES, pending])
    snapshot, rules = args[args.index("--snapshot") + 1], args[args.index("--rules") + 1]
    explain = ["explain", "web/web", "--rules", rules, "--snapshot", snapshot, "-o", "json"]
    assert main(explain) == 0
    assert _rejections(capsys.readouterr().out) == {"a": (ANTI,), "b": ()}
