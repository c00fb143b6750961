"""`policyext explain --rules` takes its paths as every command does: repeated, or
separated by commas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.run import FIXTURES, RULES, policyext

CRITICAL = str(RULES / "critical-off-spot.yaml")
FREE_CPU = str(RULES / "most-free-cpu.yaml")


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    """The example cluster with the web pod pending in it."""
    cluster = yaml.safe_load((FIXTURES / "cluster.yaml").read_text())
    pending = yaml.safe_load((FIXTURES / "web-pod.yaml").read_text())
    pending["status"] = {"phase": "Pending"}
    cluster["items"].append(pending)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    return path


@pytest.mark.parametrize(
    "rules",
    [
        ["--rules", f"{CRITICAL},{FREE_CPU}"],
        ["--rules", CRITICAL, "--rules", FREE_CPU],
        ["--rules", f"{CRITICAL},", "--rules", f",{FREE_CPU}"],
    ],
    ids=["comma-separated", "a repeated flag", "both, with empty parts"],
)
def test_explain_reads_the_same_policies_whichever_form_names_them(
    snapshot: Path, rules: list[str]
) -> None:
    pod = yaml.safe_load((FIXTURES / "web-pod.yaml").read_text())["metadata"]
    done = policyext(
        "explain", f"{pod['namespace']}/{pod['name']}", *rules, "--snapshot", snapshot, "-o", "json"
    )
    assert done.returncode == 0, done.stderr
    policies = sorted(p["name"] for p in json.loads(done.stdout)["policies"])
    assert policies == ["critical-off-spot", "most-free-cpu"]
