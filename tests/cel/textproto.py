"""A small, strict reader of the protobuf text format, enough for cel-spec's test data.

The reader knows no schema, so it returns a generic tree: a message is a dict from field
name to the list of values given for it (every field may repeat; the schema decides). A
value is a nested message, a string literal as raw `bytes` (text-format escapes denote
bytes, so decoding waits until the schema says the field is a string), an `int`, a
`float`, or an `Ident` (enum names, `true`/`false`, `inf`, `nan`). Any expansions
(`[type.googleapis.com/pkg.Type] { ... }`) keep their bracketed name as the field name.

The accessors below (`single`, `as_text`, `as_float`...) apply a field's schema type to a
generic value and raise `TextprotoError` when it does not fit.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Final, TypeAlias


class TextprotoError(ValueError):
    """Malformed text format, or a value that does not fit the type asked for."""


class Ident(str):
    """A bare identifier: an enum value name, `true`/`false`, `inf`, `-inf` or `nan`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Ident({str(self)!r})"


Scalar: TypeAlias = bytes | int | float | Ident
Message: TypeAlias = dict[str, list["Value"]]
Value: TypeAlias = Scalar | Message

_SIMPLE_ESCAPES: Final[dict[str, int]] = {
    "n": 0x0A,
    "t": 0x09,
    "r": 0x0D,
    "a": 0x07,
    "b": 0x08,
    "f": 0x0C,
    "v": 0x0B,
    "\\": 0x5C,
    "'": 0x27,
    '"': 0x22,
    "?": 0x3F,
}
_DIGITS: Final = frozenset("0123456789")
_NUMBER_START: Final = _DIGITS | {"-"}
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_OCT: Final = frozenset("01234567")

_IDENT_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A number token runs on over anything that could continue it, so `1x` or `0x` is reported
# as malformed instead of being read as two tokens.
_NUMBER_RE: Final = re.compile(r"-?(?:\.[0-9]|[0-9])[0-9A-Za-z_.+-]*")
_HEX_INT_RE: Final = re.compile(r"-?0[xX][0-9a-fA-F]+")
_OCT_INT_RE: Final = re.compile(r"-?0[0-7]+")
_DEC_INT_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT_RE: Final = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?[fF]?")
_TYPE_URL_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(?:/[A-Za-z_][A-Za-z0-9_.]*)?")
_FLOAT_WORDS: Final = frozenset({"inf", "infinity", "nan"})


class _Token:
    __slots__ = ("kind", "pos", "text", "value")

    def __init__(self, kind: str, text: str, value: Scalar | None, pos: int):
        self.kind = kind  # "ident", "number", "string", "punct", "type_url" or "eof"
        self.text = text
        self.value = value
        self.pos = pos  # line and column are worked out only for an error message


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> TextprotoError:
        line, column = self.position(self.pos if pos is None else pos)
        return TextprotoError(f"{line}:{column}: {message}")

    def _skip_blanks(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif ch in " \t\r\n\f\v":
                self.pos += 1
            else:
                return

    def position(self, at: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, at) + 1
        return line, at - (self.text.rfind("\n", 0, at) + 1) + 1

    def next_token(self) -> _Token:
        self._skip_blanks()
        text = self.text
        start = self.pos
        if start >= len(text):
            return _Token("eof", "", None, start)
        ch = text[start]
        if ch in "\"'":
            return _Token("string", text[start], self._string(), start)
        if ch in _NUMBER_START or (ch == "." and text[start + 1 : start + 2] in _DIGITS):
            return self._number_or_signed_word(start)
        m = _IDENT_RE.match(text, start)
        if m is not None:
            self.pos = m.end()
            return _Token("ident", m.group(), Ident(m.group()), start)
        if ch in "{}<>[]:,;":
            self.pos += 1
            return _Token("punct", ch, None, start)
        raise self.error(f"unexpected character {ch!r}")

    def type_url(self) -> _Token:
        """Inside `[...]` of a field name: `type.googleapis.com/pkg.Type` or `pkg.ext`."""
        self._skip_blanks()
        start = self.pos
        m = _TYPE_URL_RE.match(self.text, self.pos)
        if m is None:
            raise self.error("expected a type URL or an extension name")
        self.pos = m.end()
        return _Token("type_url", m.group(), None, start)

    def _number_or_signed_word(self, start: int) -> _Token:
        text = self.text
        if text[start] == "-":
            word = _IDENT_RE.match(text, start + 1)
            if word is not None:
                if word.group().lower() not in _FLOAT_WORDS:
                    raise self.error(f"unexpected '-' before {word.group()!r}")
                self.pos = word.end()
                return _Token("number", "-" + word.group(), Ident("-" + word.group()), start)
        m = _NUMBER_RE.match(text, start)
        if m is None:
            raise self.error("a number must follow '-'")
        raw = m.group()
        self.pos = m.end()
        return _Token("number", raw, _number_value(raw, self, start), start)

    def _string(self) -> bytes:
        text = self.text
        quote = text[self.pos]
        start = self.pos
        self.pos += 1
        out = bytearray()
        while True:
            if self.pos >= len(text) or text[self.pos] == "\n":
                raise self.error("unterminated string", start)
            ch = text[self.pos]
            if ch == quote:
                self.pos += 1
                return bytes(out)
            if ch != "\\":
                out += ch.encode("utf-8")
                self.pos += 1
                continue
            self._escape(out)

    def _escape(self, out: bytearray) -> None:
        text = self.text
        at = self.pos
        self.pos += 1
        if self.pos >= len(text):
            raise self.error("unterminated escape", at)
        ch = text[self.pos]
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
            self.pos += 1
        elif ch in _OCT:
            digits = self._take(_OCT, 3)
            code = int(digits, 8)
            if code > 0xFF:
                raise self.error(f"octal escape \\{digits} is above \\377", at)
            out.append(code)
        elif ch == "x":
            self.pos += 1
            digits = self._take(_HEX, 2)
            if not digits:
                raise self.error("\\x needs a hex digit", at)
            out.append(int(digits, 16))
        elif ch in "uU":
            width = 4 if ch == "u" else 8
            self.pos += 1
            code = self._code_point(width, at)
            if 0xD800 <= code <= 0xDBFF:
                code = self._low_surrogate(code, at)
            elif 0xDC00 <= code <= 0xDFFF:
                raise self.error("unpaired low surrogate", at)
            out += chr(code).encode("utf-8")
        else:
            raise self.error(f"unknown escape \\{ch}", at)

    def _take(self, allowed: frozenset[str], limit: int) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.pos - start < limit:
            if self.text[self.pos] not in allowed:
                break
            self.pos += 1
        return self.text[start : self.pos]

    def _code_point(self, width: int, at: int) -> int:
        digits = self._take(_HEX, width)
        if len(digits) != width:
            raise self.error(f"a unicode escape needs {width} hex digits", at)
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise self.error("unicode escape beyond U+10FFFF", at)
        return code

    def _low_surrogate(self, high: int, at: int) -> int:
        # protobuf joins a \uD8xx\uDCxx pair into one code point
        if self.text[self.pos : self.pos + 2] != "\\u":
            raise self.error("unpaired high surrogate", at)
        self.pos += 2
        low = self._code_point(4, at)
        if not 0xDC00 <= low <= 0xDFFF:
            raise self.error("unpaired high surrogate", at)
        return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)


def _number_value(raw: str, lexer: _Lexer, start: int) -> int | float:
    if _HEX_INT_RE.fullmatch(raw):
        return int(raw, 16)
    if _OCT_INT_RE.fullmatch(raw):
        return int(raw, 8)
    if _DEC_INT_RE.fullmatch(raw):
        return int(raw, 10)
    # what is not an integer must say it is a float (`08` is a malformed octal, not 8.0)
    if _FLOAT_RE.fullmatch(raw) and any(c in raw for c in ".eEfF"):
        return float(raw[:-1] if raw[-1] in "fF" else raw)
    raise lexer.error(f"malformed number {raw!r}", start)


class _Parser:
    def __init__(self, text: str) -> None:
        self.lexer = _Lexer(text)
        # one token of lookahead, so the lexer can be asked for a type URL after `[`
        self.ahead: _Token | None = None

    def peek(self) -> _Token:
        if self.ahead is None:
            self.ahead = self.lexer.next_token()
        return self.ahead

    def next(self) -> _Token:
        tok = self.peek()
        self.ahead = None
        return tok

    def error(self, tok: _Token, message: str) -> TextprotoError:
        found = {"eof": "end of input", "string": "a string"}.get(tok.kind, repr(tok.text))
        return self.lexer.error(f"{message}, found {found}", tok.pos)

    def expect(self, text: str) -> _Token:
        tok = self.next()
        if tok.kind != "punct" or tok.text != text:
            raise self.error(tok, f"expected {text!r}")
        return tok

    def message(self, closer: str | None) -> Message:
        msg: Message = {}
        while True:
            tok = self.peek()
            if closer is None and tok.kind == "eof":
                return msg
            if closer is not None and tok.kind == "punct" and tok.text == closer:
                self.next()
                return msg
            name = self.field_name()
            values = msg.setdefault(name, [])
            self.field_value(values)
            sep = self.peek()
            if sep.kind == "punct" and sep.text in ",;":
                self.next()

    def field_name(self) -> str:
        tok = self.next()
        if tok.kind == "ident":
            return tok.text
        if tok.kind == "punct" and tok.text == "[":
            name = self.lexer.type_url()
            self.expect("]")
            return f"[{name.text}]"
        raise self.error(tok, "expected a field name")

    def field_value(self, values: list[Value]) -> None:
        tok = self.peek()
        if tok.kind == "punct" and tok.text in "{<":
            values.append(self.block())
            return
        self.expect(":")
        tok = self.peek()
        if tok.kind == "punct" and tok.text in "{<":
            values.append(self.block())
        elif tok.kind == "punct" and tok.text == "[":
            self.next()
            self.list_items(values)
        else:
            values.append(self.scalar())

    def list_items(self, values: list[Value]) -> None:
        tok = self.peek()
        if tok.kind == "punct" and tok.text == "]":
            self.next()
            return
        while True:
            tok = self.peek()
            values.append(
                self.block() if tok.kind == "punct" and tok.text in "{<" else self.scalar()
            )
            tok = self.next()
            if tok.kind == "punct" and tok.text == "]":
                return
            if tok.kind != "punct" or tok.text != ",":
                raise self.error(tok, "expected ',' or ']' in a list")

    def block(self) -> Message:
        opener = self.next()
        return self.message("}" if opener.text == "{" else ">")

    def scalar(self) -> Scalar:
        tok = self.next()
        if tok.kind == "string":
            assert isinstance(tok.value, bytes)
            parts = [tok.value]
            # adjacent string literals concatenate, as in C
            while self.peek().kind == "string":
                more = self.next().value
                assert isinstance(more, bytes)
                parts.append(more)
            return b"".join(parts)
        if tok.kind in ("number", "ident") and tok.value is not None:
            return tok.value
        raise self.error(tok, "expected a value")


def parse(text: str) -> Message:
    """Parse a whole text-format message."""
    return _Parser(text).message(None)


def parse_file(path: Path) -> Message:
    try:
        return parse(path.read_text(encoding="utf-8"))
    except TextprotoError as err:
        raise TextprotoError(f"{path.name}:{err}") from None


# Accessors: apply a field's declared type to the generic tree.


def values(msg: Message, name: str) -> list[Value]:
    """All values of a (repeated) field; empty when absent."""
    return msg.get(name, [])


def single(msg: Message, name: str) -> Value | None:
    """The value of a singular field, None when absent; giving it twice is an error."""
    found = msg.get(name)
    if not found:
        return None
    if len(found) > 1:
        raise TextprotoError(f"field {name!r} is not repeated but is given {len(found)} times")
    return found[0]


def as_message(value: Value) -> Message:
    if not isinstance(value, dict):
        raise TextprotoError(f"expected a message, found {value!r}")
    return value


def as_bytes(value: Value) -> bytes:
    if not isinstance(value, bytes):
        raise TextprotoError(f"expected a string literal, found {value!r}")
    return value


def as_text(value: Value) -> str:
    """A string field: the literal's bytes must be UTF-8."""
    try:
        return as_bytes(value).decode("utf-8")
    except UnicodeDecodeError as err:
        raise TextprotoError(f"string field is not UTF-8: {err}") from None


def as_int(value: Value) -> int:
    if type(value) is not int:
        raise TextprotoError(f"expected an integer, found {value!r}")
    return value


def as_float(value: Value) -> float:
    if type(value) is int or type(value) is float:
        return float(value)
    if isinstance(value, Ident):
        word = value.lower()
        negative = word.startswith("-")
        word = word.lstrip("-")
        if word in ("inf", "infinity"):
            return -math.inf if negative else math.inf
        if word == "nan":
            return math.nan
    raise TextprotoError(f"expected a floating-point number, found {value!r}")


def as_bool(value: Value) -> bool:
    if isinstance(value, Ident) and value in ("true", "True", "t"):
        return True
    if isinstance(value, Ident) and value in ("false", "False", "f"):
        return False
    if type(value) is int and value in (0, 1):
        return value == 1
    raise TextprotoError(f"expected a bool, found {value!r}")


def as_enum(value: Value) -> str | int:
    """An enum field: its value name, or its number when given as one."""
    if isinstance(value, Ident) and not value.startswith("-"):
        return str(value)
    if type(value) is int:
        return value
    raise TextprotoError(f"expected an enum value, found {value!r}")
