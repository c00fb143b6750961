"""`policyext config --url-prefix`: a path appended to --url, as `serve --url-prefix` takes
it; an address given there is refused rather than glued behind --url's default."""

from __future__ import annotations

import pytest
import yaml

from tests.cli.run import policyext


@pytest.mark.parametrize(
    ("prefix", "says"),
    [
        ("http://foo:1/x", "--url-prefix is a path appended to --url (e.g. /scheduler), not an"),
        ("https://policyext/scheduler", "give the scheme and host with --url"),
        ("//policyext:8888/scheduler", "not an address"),
        ("/scheduler?verb=filter", "--url-prefix takes no query or fragment"),
        ("/scheduler#filter", "--url-prefix takes no query or fragment"),
    ],
)
def test_an_address_as_url_prefix_is_refused_and_names_the_flag(prefix: str, says: str) -> None:
    done = policyext("config", "--url-prefix", prefix)
    assert done.returncode == 1
    assert says in done.stderr
    assert repr(prefix) in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("prefix", ["/scheduler", "scheduler", "scheduler/", "/a/b"])
def test_a_path_as_url_prefix_follows_the_url(prefix: str) -> None:
    done = policyext("config", "--url", "http://policyext:8888", "--url-prefix", prefix)
    assert done.returncode == 0, done.stderr
    extender = yaml.safe_load(done.stdout)["extenders"][0]
    assert extender["urlPrefix"] == "http://policyext:8888/" + prefix.strip("/")


def test_url_prefix_has_help_that_says_it_is_a_path() -> None:
    done = policyext("config", "--help")
    assert done.returncode == 0
    options = " ".join(done.stdout.split("options:")[1].split())
    assert "--url-prefix PATH the path prefix of the verbs" in options


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--url", "http://policyext:99999"],
            "a port from 1 to 65535; got 'http://policyext:99999'",
        ),
        (["--url", "http://policyext:http"], "a port from 1 to 65535"),
        (["--url", "http://policyext:0"], "a port from 1 to 65535"),
        (["--url", "http://policy ext:8888"], "a host without spaces"),
        (["--scheduler-name", ""], "--scheduler-name needs a name"),
    ],
    ids=["a port past 65535", "a port that is no number", "port 0", "a space", "an empty name"],
)
def test_other_flags_kube_scheduler_would_misread_are_refused(args: list[str], says: str) -> None:
    done = policyext("config", *args)
    assert done.returncode == 1
    assert says in done.stderr
    assert done.stdout == ""
