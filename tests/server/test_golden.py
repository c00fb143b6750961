"""Reply files are rewritten only on purpose (POLICYEXT_UPDATE_FIXTURES=1 exactly), and a
run that rewrites one never passes: it skips, and fails under POLICYEXT_REQUIRE_ALL=1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.golden import UPDATE_ENV, assert_matches_fixture

OLD = b'{"Error":"old"}\n'
NEW = b'{"Error":"new"}\n'


@pytest.fixture
def reply_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(UPDATE_ENV, raising=False)
    monkeypatch.delenv("POLICYEXT_REQUIRE_ALL", raising=False)
    path = tmp_path / "verb.reply.json"
    path.write_bytes(OLD)
    return path


@pytest.mark.parametrize("value", [None, "", "0", "true", "yes", "2"])
def test_a_differing_reply_fails_and_leaves_the_file_unless_the_variable_is_exactly_1(
    reply_file: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is not None:
        monkeypatch.setenv(UPDATE_ENV, value)
    with pytest.raises(AssertionError, match=r"verb\.reply\.json differs"):
        assert_matches_fixture(NEW, reply_file)
    assert reply_file.read_bytes() == OLD


def test_with_the_variable_1_a_differing_reply_is_written_and_the_test_skips(
    reply_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(UPDATE_ENV, "1")
    with pytest.raises(pytest.skip.Exception, match=r"rewrote verb\.reply\.json"):
        assert_matches_fixture(NEW, reply_file)
    assert reply_file.read_bytes() == NEW


def test_under_require_all_a_rewrite_fails_instead_of_skipping(
    reply_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(UPDATE_ENV, "1")
    monkeypatch.setenv("POLICYEXT_REQUIRE_ALL", "1")
    with pytest.raises(pytest.fail.Exception, match=r"rewrote verb\.reply\.json"):
        assert_matches_fixture(NEW, reply_file)
    assert reply_file.read_bytes() == NEW


@pytest.mark.parametrize("value", [None, "1"])
def test_a_reply_equal_to_its_file_passes_and_rewrites_nothing(
    reply_file: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is not None:
        monkeypatch.setenv(UPDATE_ENV, value)
        monkeypatch.setenv("POLICYEXT_REQUIRE_ALL", "1")
    before = reply_file.stat().st_mtime_ns
    assert_matches_fixture(OLD, reply_file)
    assert reply_file.stat().st_mtime_ns == before
