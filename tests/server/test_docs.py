"""docs/extender-api.md shows the bytes the server really sends."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from policyext.cli import main
from tests.server.harness import REPO
from tests.server.kube import fixture_bytes

DOC = (REPO / "docs" / "extender-api.md").read_text(encoding="utf-8")
SHOWN_VERBATIM = [
    "filter-names.reply.json",
    "prioritize-names.reply.json",
    "bind.reply.json",
    "preempt-meta-victims.reply.json",
    "preempt-victims.reply.json",
]


@pytest.mark.parametrize("name", SHOWN_VERBATIM)
def test_the_api_document_shows_each_reply_fixture_byte_for_byte(name: str) -> None:
    assert fixture_bytes(name).decode().strip() in DOC


def test_the_api_document_shows_the_filter_request_fixture_whole() -> None:
    assert fixture_bytes("filter-names.request.json").decode().strip() in DOC


def _serve_flags() -> list[str]:
    """The flags `policyext serve --help` lists, so that a new one needs its documentation."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
        main(["serve", "--help"])
    return sorted(set(re.findall(r"^\s+(--[a-z][a-z-]+)", out.getvalue(), re.M)) - {"--help"})


def test_serve_has_the_flags_the_document_expects() -> None:
    assert len(_serve_flags()) >= 11


@pytest.mark.parametrize("flag", _serve_flags())
def test_the_api_document_describes_every_serve_flag_and_its_variable(flag: str) -> None:
    variable = "POLICYEXT_" + flag.removeprefix("--").upper().replace("-", "_")
    assert f"`{flag} " in DOC or f"`{flag}`" in DOC  # with its value, or a switch
    assert f"`{variable}`" in DOC
