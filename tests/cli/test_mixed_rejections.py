"""`policyext simulate` marks a node that an unresolvable rule and an ordinary rule both
reject as unresolvable (`no*`), whichever rule comes first and whatever an Audit rule between
them says, as the extender's filter lists it in FailedAndUnresolvableNodes
(tests/server/test_mixed_rejections.py has the same policies over HTTP)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.run import REPO, policyext

MIXED = REPO / "tests" / "server" / "fixtures" / "mixed-rejections"
CLUSTER = REPO / "examples" / "cluster.yaml"
CASES = ["unresolvable-first", "ordinary-first", "audit-between"]
SPOT = "spot nodes are out for good"
ZONE = "zone eu-west-1c is full"
SPOT_C_RULES = {
    "unresolvable-first": [("no-spot", SPOT), ("not-zone-c", ZONE)],
    "ordinary-first": [("not-zone-c", ZONE), ("no-spot", SPOT)],
    "audit-between": [("no-spot", SPOT), ("not-zone-c", ZONE)],
}


@pytest.fixture(scope="module")
def pods(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A List of one pod per case, each labelled with its case."""
    path = tmp_path_factory.mktemp("pods") / "pods.yaml"
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"web-{case}", "namespace": "shop", "labels": {"case": case}},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        }
        for case in CASES
    ]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def _simulate(pods: Path, *extra: str) -> str:
    done = policyext(
        "simulate",
        "--rules",
        MIXED,
        "--pod",
        pods,
        "--snapshot",
        CLUSTER,
        "--policies-only",
        *extra,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_simulate_data_marks_the_node_both_rules_reject_unresolvable_in_every_order(
    pods: Path,
) -> None:
    results: list[dict[str, Any]] = json.loads(_simulate(pods, "-o", "json"))
    assert [r["pod"] for r in results] == [f"shop/web-{case}" for case in CASES]
    for case, result in zip(CASES, results, strict=True):
        nodes = {n["name"]: n for n in result["nodes"]}
        spot_c = nodes["spot-c"]
        assert (spot_c["feasible"], spot_c["unresolvable"]) == (False, True), case
        assert spot_c["message"] == "; ".join(m for _, m in SPOT_C_RULES[case])
        assert [(r["rule"], r["message"]) for r in spot_c["rejections"]] == SPOT_C_RULES[case]
        general_c = nodes["general-c"]
        assert (general_c["feasible"], general_c["unresolvable"]) == (False, False), case
        assert general_c["message"] == ZONE
        audits = [r["rule"] for r in spot_c["auditRejections"]]
        assert audits == (["no-spot-soon"] if case == "audit-between" else [])


def test_simulate_table_marks_the_node_both_rules_reject_no_star_in_every_order(
    pods: Path,
) -> None:
    out = _simulate(pods)
    sections = out.split("== pod ")[1:]
    assert [s.split(" ", 1)[0] for s in sections] == [f"shop/web-{case}" for case in CASES]
    for section in sections:
        cells = [line.split() for line in section.splitlines()]
        rows = {c[0]: c[1] for c in cells if c and c[0] in ("general-c", "spot-c")}
        assert rows == {"general-c": "no", "spot-c": "no*"}
