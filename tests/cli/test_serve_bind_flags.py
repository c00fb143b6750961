"""`policyext serve --bind-verb --scheduler-name`: how the command line and the environment
become the settings /bind runs with (server/binding.py)."""

from __future__ import annotations

from typing import Any

import pytest

import policyext.wsgi
from policyext.cli import main
from policyext.settings import Settings
from tests.cli.run import RULES

BIND_FLAG_CASES: list[tuple[list[str], dict[str, str], bool, list[str]]] = [
    # flags, environment -> bind_verb, scheduler_names
    ([], {}, False, ["default-scheduler"]),
    (["--bind-verb"], {}, True, ["default-scheduler"]),
    ([], {"POLICYEXT_BIND_VERB": "true"}, True, ["default-scheduler"]),
    (["--scheduler-name", "policy-scheduler"], {}, False, ["policy-scheduler"]),
    (["--scheduler-name", "a,b", "--scheduler-name", "c"], {}, False, ["a", "b", "c"]),
    (["--scheduler-name", "a,,b,"], {}, False, ["a", "b"]),
    ([], {"POLICYEXT_SCHEDULER_NAME": "a, b"}, False, ["a", "b"]),
    (["--scheduler-name", "c"], {"POLICYEXT_SCHEDULER_NAME": "a"}, False, ["c"]),
]


@pytest.mark.parametrize(
    ("flags", "env", "bind_verb", "names"),
    BIND_FLAG_CASES,
    ids=[
        " ".join([*c[0], *(f"{k}={v}" for k, v in c[1].items())]) or "none" for c in BIND_FLAG_CASES
    ],
)
def test_serve_binds_only_with_bind_verb_and_for_the_schedulers_named(
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    env: dict[str, str],
    bind_verb: bool,
    names: list[str],
) -> None:
    for variable in ("POLICYEXT_BIND_VERB", "POLICYEXT_SCHEDULER_NAME"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    served: list[Settings] = []
    monkeypatch.setattr(policyext.wsgi, "serve", served.append)

    assert main(["serve", "--rules", str(RULES), *flags]) == 0

    [settings] = served
    assert (settings.bind_verb, settings.scheduler_names) == (bind_verb, names)


@pytest.mark.parametrize("given", [["--scheduler-name", ""], ["--scheduler-name", " , "]])
def test_serve_refuses_a_scheduler_name_that_names_none_as_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], given: list[Any]
) -> None:
    monkeypatch.setattr(policyext.wsgi, "serve", lambda _: pytest.fail("served"))
    assert main(["serve", "--rules", str(RULES), *given]) == 2
    assert "--scheduler-name must name at least one scheduler" in capsys.readouterr().err
