"""`policyext serve`'s limits and access flags: the body limit follows the configuration
(node names only with a cluster, whole Nodes without), and a wrong combination is a usage
error said before anything listens."""

from __future__ import annotations

import pytest

from policyext.settings import Settings
from tests.cli.run import RULES, policyext

MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("given", "body", "buffered"),
    [
        ({"snapshot": "cluster.yaml"}, 64 * MIB, 256 * MIB),
        ({}, 64 * MIB, 256 * MIB),
        ({"kubeconfig": "kubeconfig"}, 4 * MIB, 16 * MIB),
        ({"in_cluster": True}, 4 * MIB, 16 * MIB),
        ({"kubeconfig": "kubeconfig", "max_body": 10 * MIB}, 10 * MIB, 40 * MIB),
        ({"in_cluster": True, "max_buffered": 5 * MIB}, 4 * MIB, 5 * MIB),
    ],
    ids=[
        "a snapshot: whole Nodes",
        "standalone: whole Nodes",
        "a kubeconfig: node names",
        "in the cluster: node names",
        "an explicit --max-body wins",
        "an explicit --max-buffered wins",
    ],
)
def test_the_body_limit_follows_the_configuration(
    given: dict[str, object], body: int, buffered: int
) -> None:
    settings = Settings(rules=[str(RULES)], **given)  # type: ignore[arg-type]
    assert (settings.body_limit, settings.buffered_limit) == (body, buffered)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--tls-client-allow", "kube-scheduler"], "--tls-client-allow needs --tls-client-ca"),
        (["--ops-bind", "9090"], "--ops-bind must be HOST:PORT"),
        (["--ops-bind", "127.0.0.1:70000"], "--ops-bind must be HOST:PORT"),
        (["--bind", "127.0.0.1:9", "--ops-bind", "127.0.0.1:9"], "must differ from --bind"),
        (["--introspection", "maybe"], "--introspection must be on or off, got 'maybe'"),
        (["--max-connections", "0"], "--max-connections must be a whole number of at least 1"),
        (["--max-body", "1000", "--max-buffered", "999"], "--max-buffered (999) must be at least"),
        (["--workers", "two"], "--workers must be a whole number of at least 1, got 'two'"),
        (
            ["--read-timeout", "soon"],
            "--read-timeout must be a positive number of seconds, got 'soon'",
        ),
        (["--shutdown-delay", "later"], "--shutdown-delay must be a number, got 'later'"),
    ],
    ids=[
        "allow without CA",
        "no host",
        "no such port",
        "one address",
        "not on/off",
        "0",
        "tiny",
        "a count in words",
        "a duration in words",
        "a number in words",
    ],
)
def test_a_wrong_access_or_limit_flag_is_a_usage_error(flags: list[str], says: str) -> None:
    done = policyext("serve", "--rules", RULES, *flags)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
