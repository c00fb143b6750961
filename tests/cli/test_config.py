"""`policyext config`: flags kube-scheduler would refuse (or read otherwise) are refused
here, with the flag named; what it prints is a configuration kube-scheduler loads
(tests/e2e/test_config_scheduler.py runs it)."""

from __future__ import annotations

import pytest
import yaml

from tests.cli.run import policyext


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--timeout", "5"], "--timeout must be a positive duration with its unit"),
        (["--timeout", "banana"], "got 'banana'"),
        (["--timeout", "0s"], "--timeout must be a positive duration"),
        (["--timeout=-5s"], "--timeout must be a positive duration"),
        (["--timeout", "5 s"], "--timeout must be a positive duration"),
        (["--url", "ftp://x"], "--url must be an http:// or https:// URL"),
        (["--url", "policyext:8888"], "--url must be an http:// or https:// URL"),
        (["--url", "http://"], "--url must be an http:// or https:// URL with a host"),
        (["--url", "http://x:8888/?a=b"], "--url takes no query"),
        (["--ca-file", "/ca.crt"], "--ca-file configures TLS, but --url is http://"),
        (
            ["--url", "http://x", "--cert-file", "c", "--key-file", "k"],
            "--cert-file, --key-file configure TLS, but --url is http://",
        ),
        (["--server-name", "x"], "--server-name configures TLS, but --url is http://"),
        (["--url", "https://x", "--cert-file", "c"], "--cert-file and --key-file go together"),
        (["--weight", "0"], "--weight must be at least 1"),
        # the rest of what docs/extender-api.md says is refused
        (["--url", "http://x:0"], "a port from 1 to 65535"),
        (["--url", "http://x:65536"], "a port from 1 to 65535"),
        (["--url", "http://x y"], "a host without spaces"),
        (["--url-prefix", "http://foo:1/x"], "--url-prefix is a path appended to --url"),
        (["--url-prefix", "//host/x"], "--url-prefix is a path appended to --url"),
        (["--url-prefix", "/x?a=b"], "--url-prefix takes no query"),
        (["--scheduler-name="], "--scheduler-name needs a name"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_config_refuses_what_kube_scheduler_would_not_take_and_names_the_flag(
    args: list[str], says: str
) -> None:
    done = policyext("config", *args)
    assert done.returncode == 1
    assert says in done.stderr
    assert done.stdout == ""  # nothing half-printed to paste by mistake


@pytest.mark.parametrize("args", [["--weight", "x"], ["--timeuot", "5s"]])
def test_a_value_of_another_type_or_an_unknown_flag_is_a_usage_error(args: list[str]) -> None:
    done = policyext("config", *args)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: policyext")
    assert done.stdout == ""


@pytest.mark.parametrize("timeout", ["5s", "1500ms", "1m30s", "0.5s", "2h", "250us"])
def test_config_takes_go_durations_with_their_unit(timeout: str) -> None:
    done = policyext("config", "--timeout", timeout)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["extenders"][0]["httpTimeout"] == timeout


@pytest.mark.parametrize(
    ("url", "https"), [("http://policyext:8888", False), ("https://policyext:8443", True)]
)
def test_config_turns_https_on_exactly_for_an_https_url(url: str, https: bool) -> None:
    done = policyext("config", "--url", url)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["extenders"][0]["enableHTTPS"] is https


def test_a_whole_configuration_turns_leader_election_off_and_leaves_the_connection_alone() -> None:
    done = policyext("config", "--scheduler-name", "policy-scheduler")
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    assert config["leaderElection"] == {"leaderElect": False}
    assert "clientConnection" not in config
    assert config["profiles"] == [{"schedulerName": "policy-scheduler"}]


@pytest.mark.parametrize(
    ("args", "serve"),
    [
        (["--bind"], "policyext serve --bind-verb --scheduler-name default-scheduler"),
        (
            ["--bind", "--scheduler-name", "policy-scheduler"],
            "policyext serve --bind-verb --scheduler-name policy-scheduler",
        ),
    ],
    ids=["into the default scheduler", "a second scheduler"],
)
def test_config_with_bind_says_how_serve_must_run_to_bind(args: list[str], serve: str) -> None:
    done = policyext("config", *args)
    assert done.returncode == 0, done.stderr
    assert serve in done.stdout
    assert yaml.safe_load(done.stdout)["extenders"][0]["bindVerb"] == "bind"  # (a comment)


def test_config_without_bind_says_nothing_of_binding() -> None:
    done = policyext("config")
    assert done.returncode == 0, done.stderr
    assert "--bind-verb" not in done.stdout
