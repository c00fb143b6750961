"""The SchedulingPolicy CRD of the chart (charts/policyext/crds/) against the real API server.

The API server must take the CRD as structural (it refuses others, or marks them
NonStructuralSchema), store every example policy of rules/ as it is written, refuse what
`policyext validate` refuses for a schema reason, and print the columns of
`kubectl get schedpol`. The policies are created with strict field validation, as kubectl
asks for by default.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.crd import OUTPUT as CRD_FILE
from tests.cli.run import RULES, policyext
from tests.e2e.controlplane import ApiError, ControlPlane, KubeClient
from tests.e2e.extender import Extender
from tests.e2e.rbac import can, grant_extender_rbac
from tests.waiting import PATIENCE, eventually

pytestmark = pytest.mark.e2e

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_NAME = "schedulingpolicies.policyext.io"
PLURAL = "schedulingpolicies"
POLICIES = f"/apis/policyext.io/v1alpha1/{PLURAL}"
STRICT = {"fieldValidation": "Strict"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
Json = dict[str, Any]


def _established(crd: Json) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def crd(control_plane: ControlPlane) -> Json:
    """The chart's CRD, created (the chart's own e2e test may have installed it already)
    and Established."""
    admin = control_plane.client()
    try:
        admin.create(CRDS, yaml.safe_load(CRD_FILE.read_text()))
    except ApiError as e:
        if e.status != 409:
            raise
    return admin.wait_for(f"{CRDS}/{CRD_NAME}", _established)


@pytest.fixture
def policies(crd: Json, control_plane: ControlPlane) -> Iterator[KubeClient]:
    """An admin client; every SchedulingPolicy is deleted after the test."""
    admin = control_plane.client()
    yield admin
    admin.delete(POLICIES)


def _example_policies() -> list[Json]:
    return [yaml.safe_load(path.read_text()) for path in sorted(RULES.glob("*.yaml"))]


def test_the_api_server_takes_the_chart_crd_as_structural(crd: Json) -> None:
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert "NonStructuralSchema" not in conditions
    assert crd["status"]["acceptedNames"]["shortNames"] == ["schedpol"]
    assert crd["spec"]["scope"] == "Cluster"


def test_every_example_policy_is_applied_as_written(policies: KubeClient) -> None:
    """As `kubectl apply --server-side -f rules/` sends them: each file, one apply patch."""
    examples = _example_policies()
    assert len(examples) >= 6
    for policy in examples:
        policies.request(
            "PATCH",
            f"{POLICIES}/{policy['metadata']['name']}",
            policy,
            query={**STRICT, "fieldManager": "kubectl"},
            content_type="application/apply-patch+yaml",
        )
    for policy in examples:
        stored = policies.get(f"{POLICIES}/{policy['metadata']['name']}")
        assert stored["spec"] == policy["spec"], policy["metadata"]["name"]


def test_the_api_server_list_of_the_examples_is_valid_to_policyext(
    policies: KubeClient, tmp_path: Path
) -> None:
    """The List as the API server returns it (SchedulingPolicyList, with uid,
    resourceVersion, generation, creationTimestamp, managedFields, and a status written
    through the status subresource): what `kubectl get schedpol -o json` prints."""
    for policy in _example_policies():
        policies.request("POST", POLICIES, policy, query=STRICT)
    name = "most-free-cpu"
    policies.request(
        "PATCH",
        f"{POLICIES}/{name}/status",
        {"status": {"observedGeneration": 1, "filters": 0, "scores": 1, "mode": "Enforce"}},
        content_type="application/merge-patch+json",
    )
    listed = policies.get(POLICIES)
    assert listed["kind"] == "SchedulingPolicyList"
    assert all("managedFields" in item["metadata"] for item in listed["items"])
    saved = tmp_path / "schedpol.json"
    saved.write_text(json.dumps(listed, indent=2))
    from_api = policyext("validate", saved, "-o", "json")
    assert from_api.returncode == 0, from_api.stdout
    from_files = policyext("validate", *sorted(RULES.glob("*.yaml")), "-o", "json")
    # the version is a digest of the specs: the same policies, whatever the server added
    assert json.loads(from_api.stdout)["version"] == json.loads(from_files.stdout)["version"]
    assert json.loads(from_api.stdout)["policies"] == len(listed["items"])


def _with(change: str) -> Json:
    """zone-preference and critical-off-spot with one schema error."""
    zone = yaml.safe_load((RULES / "zone-preference.yaml").read_text())
    spot = yaml.safe_load((RULES / "critical-off-spot.yaml").read_text())
    score, rule = zone["spec"]["scores"][0], spot["spec"]["filters"][0]
    if change == "a rule without its expression":
        del score["expression"]
        return zone
    if change == "a weight that is a string":
        score["weight"] = "high"
        return zone
    if change == "a weight of 0":
        score["weight"] = 0
        return zone
    if change == "an unknown normalize":
        score["normalize"] = "Softmax"
        return zone
    if change == "a rule name with capitals":
        score["name"] = "Prefer-Zone"
        return zone
    if change == "an expression too long":
        score["expression"] = "1 + " * 2500 + "1"
        return zone
    if change == "a message and a messageExpression":
        rule["messageExpression"] = "'no'"
        return spot
    if change == "neither filters nor scores":
        spot["spec"] = {"match": spot["spec"]["match"]}
        return spot
    if change == "an In selector without values":
        spot["spec"]["match"]["podSelector"] = {
            "matchExpressions": [{"key": "critical", "operator": "In"}]
        }
        return spot
    if change == "an Exists selector with values":
        spot["spec"]["match"]["podSelector"] = {
            "matchExpressions": [{"key": "critical", "operator": "Exists", "values": ["x"]}]
        }
        return spot
    if change == "a namespace listed twice":
        spot["spec"]["match"]["namespaces"] = ["shop", "shop"]
        return spot
    if change == "an unknown field in a rule":
        rule["colour"] = "red"
        return spot
    raise AssertionError(change)


SCHEMA_ERRORS = [
    "a rule without its expression",
    "a weight that is a string",
    "a weight of 0",
    "an unknown normalize",
    "a rule name with capitals",
    "an expression too long",
    "a message and a messageExpression",
    "neither filters nor scores",
    "an In selector without values",
    "an Exists selector with values",
    "a namespace listed twice",
    "an unknown field in a rule",
]


@pytest.mark.parametrize("change", SCHEMA_ERRORS)
def test_a_policy_policyext_refuses_for_its_schema_the_api_server_refuses(
    policies: KubeClient, tmp_path: Path, change: str
) -> None:
    policy = _with(change)
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    done = policyext("validate", path)
    assert done.returncode == 1, done.stdout
    with pytest.raises(ApiError) as refused:
        policies.request("POST", POLICIES, policy, query=STRICT)
    assert refused.value.status in (400, 422), refused.value.body
    assert policies.get(POLICIES)["items"] == []


def test_the_printer_columns_render_from_the_status(policies: KubeClient) -> None:
    policy = copy.deepcopy(_example_policies()[0])
    name = policy["metadata"]["name"]
    created = policies.request("POST", POLICIES, policy, query=STRICT)
    status = {
        "observedGeneration": created["metadata"]["generation"],
        "filters": 1,
        "scores": 0,
        "mode": "Enforce",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "observedGeneration": created["metadata"]["generation"],
                "lastTransitionTime": "2026-12-06T08:00:00Z",
                "reason": "Served",
                "message": "every replica serves generation 1",
            }
        ],
        "byPod": [
            {"pod": "policyext-7d9f-abcde", "observedGeneration": 1, "status": "True"},
        ],
    }
    policies.request(
        "PATCH",
        f"{POLICIES}/{name}/status",
        {"status": status},
        content_type="application/merge-patch+json",
    )
    table = _table(policies, POLICIES)
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == ["Name", "Ready", "Filters", "Scores", "Mode", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:5] == [name, "True", 1, 0, "Enforce"]
    assert isinstance(row["cells"][5], str) and row["cells"][5]  # "5s": the age


def test_a_status_sent_with_the_object_is_dropped(policies: KubeClient) -> None:
    """With the status subresource, only the extender's status writes set it."""
    policy = _example_policies()[0] | {"status": {"filters": 7}}
    created = policies.request("POST", POLICIES, policy)
    assert "status" not in created or "filters" not in created["status"]


def test_a_status_of_the_wrong_shape_is_refused(policies: KubeClient) -> None:
    policy = _example_policies()[0]
    policies.request("POST", POLICIES, policy, query=STRICT)
    with pytest.raises(ApiError) as refused:
        policies.request(
            "PATCH",
            f"{POLICIES}/{policy['metadata']['name']}/status",
            {"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}},
            content_type="application/merge-patch+json",
        )
    assert refused.value.status == 422


def _table(client: KubeClient, path: str) -> Json:
    """GET as kubectl does for its columns (a meta.k8s.io Table)."""
    table = client.request("GET", path, accept=TABLE)
    assert table["kind"] == "Table"
    return table


def _kubectl(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:  # optional: the tests above prove the same through the API
        pytest.skip("kubectl is not on PATH")
    return subprocess.run(
        [kubectl, "--kubeconfig", str(control_plane.admin_kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )


def test_kubectl_applies_rules_without_its_tests_and_prints_what_validate_reads(
    policies: KubeClient, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """What docs/policies.md tells users: `kubectl apply -f rules/` reads the folder's own
    files only (the policies), `-R` would send rules/tests/ too (PolicyTests, and the
    snapshot's Nodes and Pods); `kubectl get schedpol -o yaml` is valid to policyext."""
    applied = _kubectl(control_plane, "apply", "-f", str(RULES))
    assert applied.returncode == 0, applied.stderr
    names = sorted(p["metadata"]["name"] for p in _example_policies())
    assert sorted(applied.stdout.split()[::2]) == [
        f"schedulingpolicy.policyext.io/{name}" for name in names
    ]
    recursive = _kubectl(control_plane, "apply", "--dry-run=server", "-R", "-f", str(RULES))
    assert recursive.returncode != 0
    assert 'no matches for kind "PolicyTest"' in recursive.stderr
    table = _kubectl(control_plane, "get", "schedpol")
    assert table.stdout.split()[:6] == ["NAME", "READY", "FILTERS", "SCORES", "MODE", "AGE"]
    printed = _kubectl(control_plane, "get", "schedpol", "-o", "yaml")
    saved = tmp_path / "schedpol.yaml"
    saved.write_text(printed.stdout)
    from_kubectl = policyext("validate", saved, "-o", "json")
    from_files = policyext("validate", *sorted(RULES.glob("*.yaml")), "-o", "json")
    assert from_kubectl.returncode == 0, from_kubectl.stdout
    assert json.loads(from_kubectl.stdout)["version"] == json.loads(from_files.stdout)["version"]


def _served(extender: Extender) -> Json:
    status, body = extender.get("/policies")
    assert status == 200 and isinstance(body, dict), body
    return body


def test_serve_rules_crd_serves_the_objects_and_follows_their_changes(
    policies: KubeClient, control_plane: ControlPlane
) -> None:
    """`policyext serve --rules-crd`: the objects are the policy set, reloaded on every
    change of a spec; a broken one keeps its last good generation serving, names the object,
    and blocks no other object's update."""
    spot, cpu = (
        yaml.safe_load((RULES / f).read_text())
        for f in ("critical-off-spot.yaml", "most-free-cpu.yaml")
    )
    policies.request("POST", POLICIES, spot, query=STRICT)
    extender = Extender(
        control_plane,
        control_plane.admin_kubeconfig,
        [],
        name="policyext-crd",
        args=["--rules-crd"],
    )
    extender.start()
    try:
        served = _served(extender)
        assert [p["name"] for p in served["policies"]] == ["critical-off-spot"]
        from_file = policyext("validate", RULES / "critical-off-spot.yaml", "-o", "json")
        assert served["version"] == json.loads(from_file.stdout)["version"]

        policies.request("POST", POLICIES, cpu, query=STRICT)
        eventually(lambda: len(_served(extender)["policies"]) == 2)

        broken = copy.deepcopy(cpu)
        broken["spec"]["scores"][0]["expression"] = "node.(("  # the schema's, not CEL's
        policies.replace(f"{POLICIES}/most-free-cpu", broken)

        def rejected() -> Json | None:
            last = _served(extender)["lastReload"]
            return last if last and not last["ok"] else None

        last = eventually(rejected)
        assert last["errors"][0].startswith("schedulingpolicy/most-free-cpu:")
        assert len(_served(extender)["policies"]) == 2  # its last good generation

        renamed = copy.deepcopy(spot)
        renamed["spec"]["filters"][0]["name"] = "off-spot"
        policies.replace(f"{POLICIES}/critical-off-spot", renamed)

        def filters() -> dict[str, list[str]]:
            return {
                p["name"]: [f["name"] for f in p["filters"]] for p in _served(extender)["policies"]
            }

        eventually(lambda: filters()["critical-off-spot"] == ["off-spot"])
        assert sorted(filters()) == ["critical-off-spot", "most-free-cpu"]
        last = _served(extender)["lastReload"]
        assert not last["ok"] and last["version"] == _served(extender)["version"]
        assert [e.split(":")[0] for e in last["errors"]] == ["schedulingpolicy/most-free-cpu"]

        policies.delete(f"{POLICIES}/most-free-cpu")
        eventually(
            lambda: [p["name"] for p in _served(extender)["policies"]] == ["critical-off-spot"]
        )
    finally:
        extender.stop()


def _ready_condition(obj: Json) -> Json:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return dict(condition)
    return {}


def _by_pod(obj: Json) -> dict[str, Json]:
    return {e["pod"]: e for e in (obj.get("status") or {}).get("byPod") or []}


REPLICAS = ("policyext-a", "policyext-b")
GROUP = "policyext.io"


def _chart_identity(control_plane: ControlPlane, admin: KubeClient, namespace: str) -> Path:
    """A kubeconfig of a new ServiceAccount granted exactly the chart's ClusterRole of the
    extender with `policies.crd=true` (and nothing else): what a replica runs with."""
    account = "policyext-crd"
    grant_extender_rbac(
        admin,
        features=("policies.crd=true",),
        name=f"{namespace}-{account}",
        subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    )
    admin.create(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}},
    )
    token = admin.service_account_token(namespace, account)
    identity = KubeClient(admin.port, token, admin.context)
    eventually(lambda: can(identity, "patch", PLURAL, subresource="status", group=GROUP))
    assert can(identity, "watch", PLURAL, group=GROUP)
    assert not can(identity, "update", PLURAL, group=GROUP)  # the spec is the authors'
    assert not can(identity, "update", PLURAL, subresource="status", group=GROUP)
    path = control_plane.workdir / f"{namespace}-{account}.kubeconfig"
    return control_plane.write_token_kubeconfig(account, token, path)


def _says(obj: Json, ready: str, served: int) -> bool:
    """The status describes the object's generation: Ready is `ready`, and every replica
    has read that generation and serves generation `served`."""
    generation = obj["metadata"]["generation"]
    entries = _by_pod(obj)
    return (
        (obj.get("status") or {}).get("observedGeneration") == generation
        and _ready_condition(obj).get("status") == ready
        and sorted(entries) == sorted(REPLICAS)
        and all(
            e["observedGeneration"] == generation and e.get("servingGeneration") == served
            for e in entries.values()
        )
    )


def test_the_status_says_which_generation_every_replica_serves_and_why_one_is_refused(
    policies: KubeClient, control_plane: ControlPlane, admin: KubeClient, namespace: str
) -> None:
    """Two `serve --rules-crd` replicas write one SchedulingPolicy's status through the real
    API server: Ready with its generation and both replicas' entries; a broken generation
    (a CEL error the API server cannot see) Ready False with the problem's field path and
    position, the last good generation still serving on both; fixed, Ready again. Each
    replica writes with its own field manager, and the status settles (no write loop). The
    second replica runs with the chart's RBAC for `policies.crd` alone."""
    spot = yaml.safe_load((RULES / "critical-off-spot.yaml").read_text())
    name = spot["metadata"]["name"]
    path = f"{POLICIES}/{name}"
    first = policies.request("POST", POLICIES, spot, query=STRICT)["metadata"]["generation"]
    kubeconfigs = [
        control_plane.admin_kubeconfig,
        _chart_identity(control_plane, admin, namespace),
    ]
    extenders = [
        Extender(
            control_plane,
            kubeconfig,
            [],
            name=replica,
            args=["--rules-crd", "--replica-name", replica, "--audit-events-per-second", "0"],
        )
        for replica, kubeconfig in zip(REPLICAS, kubeconfigs, strict=True)
    ]
    for extender in extenders:
        extender.start()
    try:
        ready = policies.wait_for(path, lambda o: _says(o, "True", first))
        status = ready["status"]
        assert (status["filters"], status["scores"], status["mode"]) == (1, 0, "Enforce")
        condition = _ready_condition(ready)
        assert (condition["reason"], condition["observedGeneration"]) == ("Served", first)
        assert all(e["status"] == "True" for e in _by_pod(ready).values())
        managers = {f["manager"] for f in ready["metadata"]["managedFields"]}
        assert {f"policyext/{r}" for r in REPLICAS} <= managers
        table = _table(policies, path)
        assert table["rows"][0]["cells"][:5] == [name, "True", 1, 0, "Enforce"]

        broken = copy.deepcopy(spot)
        broken["spec"]["filters"][0]["expression"] = "node.metadata.labelz.size() == 0"
        second = policies.replace(path, broken)["metadata"]["generation"]
        assert second > first
        refused = policies.wait_for(path, lambda o: _says(o, "False", first))
        condition = _ready_condition(refused)
        assert (condition["reason"], condition["observedGeneration"]) == ("Invalid", second)
        assert condition["message"].startswith(
            f"generation {second} is not served (generation {first} keeps serving): "
            "spec.filters[0].expression: 1:15: no field 'labelz' in ObjectMeta"
        ), condition["message"]
        for entry in _by_pod(refused).values():
            assert entry["status"] == "False" and entry["reason"] == "Invalid"
            assert entry["message"].startswith("spec.filters[0].expression: 1:15: no field")
        # both replicas still serve the last good generation, as `validate` reads it
        from_file = policyext("validate", RULES / "critical-off-spot.yaml", "-o", "json")
        for extender in extenders:
            assert _served(extender)["version"] == json.loads(from_file.stdout)["version"]
        assert _table(policies, path)["rows"][0]["cells"][1] == "False"

        # the status settles: once both replicas have said it, nothing is written again.
        # Another object's status being written by both shows that both writers have gone
        # over every object since (each pass does), and left this one alone.
        settled = policies.get(path)["metadata"]["resourceVersion"]
        cpu = yaml.safe_load((RULES / "most-free-cpu.yaml").read_text())
        other = policies.request("POST", POLICIES, cpu, query=STRICT)["metadata"]
        policies.wait_for(
            f"{POLICIES}/{cpu['metadata']['name']}",
            lambda o: _says(o, "True", other["generation"]),
        )
        assert policies.get(path)["metadata"]["resourceVersion"] == settled

        fixed = copy.deepcopy(spot)
        fixed["spec"]["filters"][0]["message"] = "no spot nodes for critical pods"
        third = policies.replace(path, fixed)["metadata"]["generation"]
        again = policies.wait_for(path, lambda o: _says(o, "True", third))
        assert all("message" not in e for e in _by_pod(again).values())
    finally:
        for extender in extenders:
            extender.stop()
