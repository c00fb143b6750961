"""Tokens of CEL source text, with every string and bytes literal form of the spec.

A hand-written lexer (rather than celpy's lark grammar) because CEL's literal forms need
code: raw and triple-quoted strings keep their newlines, escapes mean code points in strings
and raw bytes in bytes literals, and every error needs its exact position.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from policyext.cel.errors import CELSyntaxError
from policyext.cel.values import UINT64_MAX, UInt

RESERVED: Final = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)

# kinds: INT, UINT, DOUBLE, STRING, BYTES, IDENT, QUOTED, OP, EOF
_TOKEN_RE: Final = re.compile(
    r"""
    (?P<ws>[ \t\n\r\f]+|//[^\n]*)
  | (?P<double>(?:[0-9]+\.[0-9]+|[0-9]+(?=[eE])|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<hex>0x[0-9a-fA-F]+[uU]?)
  | (?P<int>[0-9]+[uU]?)
  | (?P<string>(?:[rR]|[bB][rR]?)?(?:'''|\"\"\"|'|\"))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<quoted>`[_a-zA-Z0-9./\- ]+`)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,\[\](){}])
    """,
    re.VERBOSE,
)

_SIMPLE_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    value: object
    offset: int


class Lexer:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, message: str, offset: int) -> CELSyntaxError:
        line, column = position(self.source, offset)
        return CELSyntaxError(message, line, column)

    def tokens(self) -> list[Token]:
        src = self.source
        out: list[Token] = []
        pos = 0
        end = len(src)
        while pos < end:
            m = _TOKEN_RE.match(src, pos)
            if m is None:
                raise self.error(f"unexpected character {src[pos]!r}", pos)
            kind = m.lastgroup
            text = m.group()
            if kind == "ws":
                pos = m.end()
                continue
            if kind == "string":
                token, pos = self._string(m.group(), pos)
                out.append(token)
                continue
            if kind == "double":
                value = float(text)
                if math.isinf(value):  # beyond the largest double: Go's parser refuses it
                    raise self.error("invalid double literal", pos)
                out.append(Token("DOUBLE", text, value, pos))
            elif kind in ("hex", "int"):
                out.append(self._integer(text, pos))
            elif kind == "ident":
                out.append(Token("IDENT", text, text, pos))
            elif kind == "quoted":  # a field name in backquotes: `a.`b-c``
                out.append(Token("QUOTED", text, text[1:-1], pos))
            else:
                out.append(Token("OP", text, text, pos))
            pos = m.end()
        out.append(Token("EOF", "", None, end))
        return out

    def _integer(self, text: str, offset: int) -> Token:
        unsigned = text[-1] in "uU"
        digits = text[:-1] if unsigned else text
        if len(digits.lstrip("0")) > 22:  # longer than any 64-bit literal, even in hex
            raise self.error("integer literal out of range", offset)
        value = int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits)
        if unsigned:
            if value > UINT64_MAX:
                raise self.error("unsigned integer literal out of range", offset)
            return Token("UINT", text, UInt(value), offset)
        # 2**63 is allowed here: only as the operand of unary minus (checked by the parser)
        if value > 2**63:
            raise self.error("integer literal out of range", offset)
        return Token("INT", text, value, offset)

    def _string(self, opener: str, start: int) -> tuple[Token, int]:
        prefix = opener.rstrip("'\"").lower()
        quote = opener[len(prefix) :]
        raw = "r" in prefix
        is_bytes = "b" in prefix
        src = self.source
        pos = start + len(opener)
        multiline = len(quote) == 3
        parts: list[str] = []
        data = bytearray()
        while True:
            if pos >= len(src):
                raise self.error("unterminated string literal", start)
            if src.startswith(quote, pos):
                pos += len(quote)
                break
            ch = src[pos]
            if not multiline and ch in "\r\n":
                raise self.error("newline in single-quoted string literal", pos)
            if ch == "\\" and not raw:
                value, pos = self._escape(pos, is_bytes)
            else:
                value, pos = ch, pos + 1
            if not is_bytes:
                parts.append(value)  # type: ignore[arg-type]
            elif isinstance(value, int):
                data.append(value)
            else:
                data.extend(value.encode("utf-8"))
        text = src[start:pos]
        if is_bytes:
            return Token("BYTES", text, bytes(data), start), pos
        return Token("STRING", text, "".join(parts), start), pos

    def _escape(self, pos: int, is_bytes: bool) -> tuple[str | int, int]:
        """Decode the escape at `pos` (a backslash). In bytes literals, octal and hex
        escapes denote one byte (an int); everywhere else a code point (a str)."""
        src = self.source
        if pos + 1 >= len(src):
            raise self.error("unterminated escape sequence", pos)
        ch = src[pos + 1]
        if ch in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[ch], pos + 2
        if ch in "01234567":
            digits = src[pos + 1 : pos + 4]
            if len(digits) != 3 or any(d not in "01234567" for d in digits) or ch > "3":
                raise self.error("invalid octal escape", pos)
            code = int(digits, 8)
            return (code if is_bytes else chr(code)), pos + 4
        if ch in "xX":
            digits = src[pos + 2 : pos + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{2}", digits):
                raise self.error("invalid hex escape", pos)
            code = int(digits, 16)
            return (code if is_bytes else chr(code)), pos + 4
        if ch in "uU":
            if is_bytes:
                raise self.error("unicode escapes are not allowed in bytes literals", pos)
            width = 4 if ch == "u" else 8
            digits = src[pos + 2 : pos + 2 + width]
            if len(digits) != width or not all(c in _HEX_DIGITS for c in digits):
                raise self.error("invalid unicode escape", pos)
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                raise self.error("invalid unicode code point in escape", pos)
            return chr(code), pos + 2 + width
        raise self.error(f"invalid escape sequence '\\{ch}'", pos)


def position(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column (in code points) of an offset."""
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column
