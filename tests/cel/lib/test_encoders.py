"""Base64 encoding and decoding, as Go's standard encoding does them."""

from __future__ import annotations

import pytest

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import merge_libraries
from policyext.cel.lib.encoders import ENCODERS_LIBRARY

TABLE = merge_libraries([ENCODERS_LIBRARY])


def call(name: str, value: object) -> object:
    overload = TABLE.find_global(name, 1)
    assert overload is not None, name
    return overload.impl(value)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"", ""),
        (b"h", "aA=="),
        (b"he", "aGU="),
        (b"hello", "aGVsbG8="),
        (b"\x00\xff\xfe", "AP/+"),
    ],
)
def test_encode_writes_padded_standard_base64(data: bytes, text: str) -> None:
    assert call("base64.encode", data) == text


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ("", b""),
        ("aGVsbG8=", b"hello"),
        # the padding may be left out
        ("aGVsbG8", b"hello"),
        ("aA", b"h"),
        ("aGU", b"he"),
        ("AP/+", b"\x00\xff\xfe"),
        # line breaks are skipped
        ("aGVs\r\nbG8=", b"hello"),
        ("aGVs\nbG8", b"hello"),
    ],
)
def test_decode_reads_standard_base64_with_or_without_padding(text: str, data: bytes) -> None:
    assert call("base64.decode", text) == data


@pytest.mark.parametrize(
    "text",
    [
        "a",  # one character cannot hold a byte
        "aGVs bG8=",  # spaces are not skipped
        "aGVsbG8-",  # the URL alphabet is not the standard one
        "aGVsbG8==",  # too much padding
        "aG=sbG8=",  # padding in the middle
        "a===",
        "é",
    ],
)
def test_decode_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(CELEvalError, match="illegal base64 data"):
        call("base64.decode", text)


@pytest.mark.parametrize(("name", "value"), [("base64.encode", "text"), ("base64.decode", b"aA==")])
def test_encoders_take_the_right_type(name: str, value: object) -> None:
    with pytest.raises(CELEvalError, match="no such overload"):
        call(name, value)


@pytest.mark.parametrize("data", [b"", b"x", b"xy", b"xyz", bytes(range(256))])
def test_decoding_an_encoding_gives_the_bytes_back(data: bytes) -> None:
    assert call("base64.decode", call("base64.encode", data)) == data
