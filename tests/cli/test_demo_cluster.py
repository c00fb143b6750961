"""The demo cluster of `make run` (examples/cluster.yaml) is the cluster the example
policies' PolicyTests read (rules/tests/.fixtures/cluster.yaml): the demo answers as the
tests say."""

from __future__ import annotations

import yaml

from tests.cli.run import FIXTURES, REPO


def test_the_demo_cluster_and_the_policy_tests_cluster_hold_the_same_objects() -> None:
    demo = yaml.safe_load((REPO / "examples" / "cluster.yaml").read_text())
    tested = yaml.safe_load((FIXTURES / "cluster.yaml").read_text())
    assert demo == tested
