"""Base64 (cel-go's `ext.Encoders`): `base64.encode(bytes)` and `base64.decode(string)`.

Decoding follows Go's standard encoding, which cel-go uses: line breaks are ignored, the
padding may be left out, and anything else outside the alphabet is an error.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Final

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import CHARS_PER_UNIT, Library
from policyext.cel.values import no_such_overload

ENCODERS_LIBRARY: Final = Library("encoders")

_ALPHABET: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_SCAN_FACTOR: Final = 0.1


def _size_cost(value: object) -> int:
    return math.ceil(len(value) * _SCAN_FACTOR) if isinstance(value, str | bytes) else 0


def _encoded_size(_room: int, data: object) -> int:
    # four characters per three bytes, padded
    return (len(data) + 2) // 3 * 4 // CHARS_PER_UNIT if type(data) is bytes else 0


def _decoded_size(_room: int, text: object) -> int:
    return len(text) * 3 // 4 // CHARS_PER_UNIT if type(text) is str else 0


@ENCODERS_LIBRARY.function("base64.encode", 1, result="string", cost=_size_cost, size=_encoded_size)
def encode(data: object) -> str:
    if type(data) is not bytes:
        raise no_such_overload("base64.encode", data)
    return base64.b64encode(data).decode("ascii")


@ENCODERS_LIBRARY.function("base64.decode", 1, result="bytes", cost=_size_cost, size=_decoded_size)
def decode(text: object) -> bytes:
    if type(text) is not str:
        raise no_such_overload("base64.decode", text)
    # Go's decoder skips carriage returns and newlines wherever they are
    data: str = text.replace("\r", "").replace("\n", "")
    body = data.rstrip("=")
    padding = len(data) - len(body)
    bad = next((i for i, c in enumerate(body) if c not in _ALPHABET), None)
    if bad is not None:
        raise _illegal(bad)
    if padding:
        # padded input must come in whole groups of four, with at most two `=`
        if len(data) % 4 or padding > 2 or len(body) % 4 + padding != 4:
            raise _illegal(len(body))
    elif len(body) % 4 == 1:
        # one leftover character cannot hold a whole byte
        raise _illegal(len(body) - 1)
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except binascii.Error as e:
        raise CELEvalError(f"illegal base64 data: {e}") from None


def _illegal(offset: int) -> CELEvalError:
    return CELEvalError(f"illegal base64 data at input byte {offset}")
