"""A PolicyTest that names a rule no policy has (a typo, the wrong policy) says so and what
was probably meant, instead of reading as a rule that did not reject the node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli.run import FIXTURES, RULES, policyext

GPU_RULE = "gpu-only-for-gpu-pods/gpu-nodes-for-gpu-pods"


def _test_file(tmp_path: Path, expect: dict[str, object]) -> Path:
    test = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "PolicyTest",
        "metadata": {"name": "names"},
        "spec": {
            "policies": [str(RULES / "gpu-only-for-gpu-pods.yaml")],
            "snapshot": str(FIXTURES / "cluster.yaml"),
            "cases": [
                {"name": "a web pod", "pod": str(FIXTURES / "web-pod.yaml"), "expect": expect}
            ],
        },
    }
    path = tmp_path / "names.test.yaml"
    path.write_text(yaml.safe_dump(test))
    return path


@pytest.mark.parametrize(
    ("expect", "says"),
    [
        (
            {"rejected": {"gpu-a": "gpu-only-for-gpu-pods/gpu-nodes-for-gpu-pod"}},
            "rejected: no filter rule or scheduler plugin named "
            f"'gpu-only-for-gpu-pods/gpu-nodes-for-gpu-pod' (did you mean {GPU_RULE}?)",
        ),
        (
            {"rejected": {"gpu-a": "critical-off-spot/gpu-nodes-for-gpu-pods"}},
            f"'critical-off-spot/gpu-nodes-for-gpu-pods' (did you mean {GPU_RULE}?)",
        ),
        (
            {"rejected": {"payments-b": "TaintTolerations"}},
            "'TaintTolerations' (did you mean TaintToleration?)",
        ),
        (
            {"auditRejected": {"general-a": ["zzz/yyy"]}},
            "auditRejected: no filter rule or scheduler plugin named 'zzz/yyy' "
            f"(the filter rules: {GPU_RULE}; or a scheduler plugin, as TaintToleration)",
        ),
    ],
    ids=["a misspelt rule", "the wrong policy", "a misspelt plugin", "nothing close"],
)
def test_an_unknown_rule_name_is_reported_with_what_was_meant(
    tmp_path: Path, expect: dict[str, object], says: str
) -> None:
    done = policyext("test", _test_file(tmp_path, expect))
    assert done.returncode == 1
    assert says in done.stdout
    assert "not rejected" not in done.stdout


def test_a_known_rule_that_did_not_reject_the_node_still_says_so(tmp_path: Path) -> None:
    done = policyext("test", _test_file(tmp_path, {"rejected": {"general-a": GPU_RULE}}))
    assert done.returncode == 1
    assert f"rejected: expected general-a rejected by {GPU_RULE}, got not rejected" in done.stdout


def test_the_right_names_pass(tmp_path: Path) -> None:
    expect = {"rejected": {"gpu-a": GPU_RULE, "payments-b": "TaintToleration"}}
    done = policyext("test", _test_file(tmp_path, expect))
    assert done.returncode == 0, done.stdout
