"""URLs: the Kubernetes CEL `url` library.

Kubernetes accepts what Go's `url.ParseRequestURI` accepts (an absolute URI or an absolute
path, `*` included) and then reads the parts from `url.Parse` of the same string, which
splits off a `#fragment` and, for `//host/path` without a scheme, takes `host` as the host.
So `isURL` can be true where `url()` fails (`/p?q#%zz`: the query is not checked, the
fragment is), and this module keeps that. Parsing follows Go 1.26's net/url: hosts in
brackets must be IPv6 addresses, an `http`/`https` host may hold one colon only, percent
escapes are checked, ASCII control characters are errors.

Go works on UTF-8 bytes, so does this module: strings are carried as one character per byte
(latin-1) while parsing and decoded again, invalid UTF-8 becoming U+FFFD, on the way out.

`getQuery()` decodes `+` as a space and `%XX` escapes, drops pairs that are badly escaped
or hold a `;`, and yields nothing for a query of more than 10000 pairs, as Go does. Two URLs
are equal when Go would print them the same (`str()`).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import ClassVar, Final

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.lib.net import AddressError, parse_address
from policyext.cel.lib.strings import go_quote
from policyext.cel.values import no_such_overload

_ALNUM: Final = string.ascii_letters + string.digits
_MARK: Final = "-_.~"
# The ASCII characters each part of a URL may hold unescaped, as Go's shouldEscape says.
_PATH: Final = frozenset(_ALNUM + _MARK + "$&+,/:;=@")
_HOST: Final = frozenset(_ALNUM + _MARK + "!$&'()*+,;=:[]<>\"")
_USER_PASSWORD: Final = frozenset(_ALNUM + _MARK + "$&+,;=")
_QUERY_COMPONENT: Final = frozenset(_ALNUM + _MARK)
_FRAGMENT: Final = frozenset(_ALNUM + _MARK + "$&+,/:;=?@!()*")
# what an already escaped path or fragment may hold on top of its own characters
_VALID_ENCODED_EXTRA: Final = frozenset("!$&'()*+,;=:@[]%")
_USERINFO: Final = frozenset(_ALNUM + "-._:~!$&'()*+,;=%@")
_HEXDIGITS: Final = frozenset(string.hexdigits)
_MAX_QUERY_PARAMS: Final = 10_000


def _quote(raw: str) -> str:
    return go_quote(raw.encode("latin-1").decode("utf-8", "surrogateescape"))


def _encode(text: str) -> str:
    """A CEL string as its UTF-8 bytes, one character per byte."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


def _decode(raw: str) -> str:
    return raw.encode("latin-1").decode("utf-8", "replace")


class URLError(ValueError):
    """A string Kubernetes does not accept as a URL; `reason` is Kubernetes' message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _ParseError(Exception):
    pass


# -- escaping -----------------------------------------------------------------------------
def _escape(s: str, allowed: frozenset[str]) -> str:
    if all(c in allowed for c in s):
        return s
    space_plus = allowed is _QUERY_COMPONENT
    out = []
    for c in s:
        if c in allowed:
            out.append(c)
        elif c == " " and space_plus:
            out.append("+")
        else:
            out.append(f"%{ord(c):02X}")
    return "".join(out)


def _unescape(s: str, mode: str) -> str:
    """Go's unescape; `mode` is "path", "query", "userinfo", "fragment", "host" or
    "zone"."""
    if "%" not in s and not (mode == "query" and "+" in s):
        if mode in ("host", "zone"):
            for c in s:
                if c < "\x80" and c not in _HOST:
                    raise _ParseError(f"invalid character {_quote(c)} in host name")
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "%":
            if i + 2 >= len(s) or s[i + 1] not in _HEXDIGITS or s[i + 2] not in _HEXDIGITS:
                raise _ParseError(f"invalid URL escape {_quote(s[i : i + 3])}")
            byte = int(s[i + 1 : i + 3], 16)
            # a host may escape only non-ASCII bytes, and `%25` (RFC 6874 zones)
            if mode == "host" and byte < 0x80 and s[i : i + 3] != "%25":
                raise _ParseError(f"invalid URL escape {_quote(s[i : i + 3])}")
            if (
                mode == "zone"
                and s[i : i + 3] != "%25"
                and byte != 0x20
                and (byte >= 0x80 or chr(byte) not in _HOST)
            ):
                raise _ParseError(f"invalid URL escape {_quote(s[i : i + 3])}")
            out.append(chr(byte))
            i += 3
            continue
        if c == "+" and mode == "query":
            out.append(" ")
        else:
            if mode in ("host", "zone") and c < "\x80" and c not in _HOST:
                raise _ParseError(f"invalid character {_quote(c)} in host name")
            out.append(c)
        i += 1
    return "".join(out)


def _valid_encoded(s: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed or c in _VALID_ENCODED_EXTRA for c in s)


def _valid_optional_port(port: str) -> bool:
    return port == "" or (port[0] == ":" and all("0" <= c <= "9" for c in port[1:]))


# -- parsing (Go's net/url) ---------------------------------------------------------------
@dataclass
class _Parts:
    scheme: str = ""
    opaque: str = ""
    user: tuple[str, str | None] | None = None
    host: str = ""
    path: str = ""
    raw_path: str = ""
    raw_query: str = ""
    fragment: str = ""
    raw_fragment: str = ""
    force_query: bool = False
    omit_host: bool = False


def _split_scheme(raw: str) -> tuple[str, str]:
    for i, c in enumerate(raw):
        if c in string.ascii_letters:
            continue
        if c in string.digits or c in "+-.":
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise _ParseError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _parse(raw: str, *, via_request: bool) -> _Parts:
    if any(c < " " or c == "\x7f" for c in raw):
        raise _ParseError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise _ParseError("empty url")
    parts = _Parts()
    if raw == "*":
        parts.path = "*"
        return parts
    scheme, rest = _split_scheme(raw)
    parts.scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        parts.force_query = True
        rest = rest[:-1]
    else:
        rest, _, parts.raw_query = rest.partition("?")
    if not rest.startswith("/"):
        if parts.scheme:
            # a rootless path after a scheme is opaque (`mailto:x@y`)
            parts.opaque = rest
            return parts
        if via_request:
            raise _ParseError("invalid URI for request")
        if ":" in rest.partition("/")[0]:
            raise _ParseError("first path segment in URL cannot contain colon")
    if (parts.scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        parts.user, parts.host = _parse_authority(parts.scheme, authority)
    elif parts.scheme and rest.startswith("/"):
        parts.omit_host = True
    parts.path = _unescape(rest, "path")
    parts.raw_path = "" if _escape(parts.path, _PATH) == rest else rest
    return parts


def _parse_authority(scheme: str, authority: str) -> tuple[tuple[str, str | None] | None, str]:
    at = authority.rfind("@")
    host = _parse_host(scheme, authority[at + 1 :])
    if at < 0:
        return None, host
    userinfo = authority[:at]
    # Go checks characters, not bytes: any non-ASCII character is refused
    if not all(c in _USERINFO for c in _decode(userinfo)):
        raise _ParseError("net/url: invalid userinfo")
    username, colon, password = userinfo.partition(":")
    user = _unescape(username, "userinfo")
    if not colon:
        return (user, None), host
    return (user, _unescape(password, "userinfo")), host


def _parse_host(scheme: str, host: str) -> str:
    bracket = host.rfind("[")
    if bracket > 0:
        raise _ParseError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind("]")
        if close < 0:
            raise _ParseError("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise _ParseError(f"invalid port {_quote(colon_port)} after host")
        port = _unescape(colon_port, "host")
        literal = host[1:close]
        zone_at = literal.find("%25")
        if zone_at >= 0:
            unescaped = _unescape(literal[:zone_at], "host") + _unescape(literal[zone_at:], "zone")
        else:
            unescaped = _unescape(literal, "host")
        # only an IPv6 address may stand in brackets (an IPv4-mapped one included)
        try:
            v6, _, _ = parse_address(unescaped)
        except AddressError as err:
            where = f" (at {_quote(err.at)})" if err.at else ""
            raise _ParseError(
                f"invalid host: ParseAddr({_quote(unescaped)}): {err.msg}{where}"
            ) from None
        if not v6:
            raise _ParseError("invalid IP-literal")
        return f"[{unescaped}]{port}"
    first = host.find(":")
    if first >= 0:
        last = host.rfind(":")
        # Go allows several colons (lists of hosts) except in http and https URLs
        i = first if scheme in ("http", "https") else last
        colon_port = host[i:]
        if not _valid_optional_port(colon_port):
            raise _ParseError(f"invalid port {_quote(colon_port)} after host")
    return _unescape(host, "host")


def _parse_request_uri(raw: str) -> _Parts:
    try:
        return _parse(raw, via_request=True)
    except _ParseError as err:
        raise URLError(_parse_message(raw, err)) from None


def _parse_reference(raw: str) -> _Parts:
    """Go's url.Parse: the fragment first, then the rest."""
    rest, hash_, fragment = raw.partition("#")
    try:
        parts = _parse(rest, via_request=False)
    except _ParseError as err:
        raise URLError(_parse_message(rest, err)) from None
    if hash_ and fragment:
        try:
            parts.fragment = _unescape(fragment, "fragment")
        except _ParseError as err:
            raise URLError(_parse_message(raw, err)) from None
        escaped = _escape(parts.fragment, _FRAGMENT)
        parts.raw_fragment = "" if escaped == fragment else fragment
    return parts


def _parse_message(raw: str, err: _ParseError) -> str:
    return f"URL parse error during conversion from string: parse {_quote(raw)}: {err}"


# -- the value ----------------------------------------------------------------------------
def _split_host_port(host_port: str) -> tuple[str, str]:
    host, port = host_port, ""
    colon = host.rfind(":")
    if colon >= 0 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


class URL:
    """A URL as Kubernetes' `url()` reads it; immutable and hashable."""

    __slots__ = ("_parts", "_text")
    cel_type_name: ClassVar[str] = "kubernetes.URL"

    def __init__(self, parts: _Parts) -> None:
        """Low level; use `URL.parse`."""
        self._parts = parts
        self._text = _format(parts)

    @classmethod
    def parse(cls, text: str) -> URL:
        """Parse as Kubernetes' `url()` does; raises `URLError` (a `ValueError`)."""
        raw = _encode(text)
        _parse_request_uri(raw)
        return cls(_parse_reference(raw))

    @staticmethod
    def request_uri_error(text: str) -> str | None:
        """What Go's url.ParseRequestURI says of the string (`parse "x": invalid URI for
        request`), or None when it accepts it: Kubernetes' `format.uri()`."""
        raw = _encode(text)
        try:
            _parse(raw, via_request=True)
        except _ParseError as err:
            return f"parse {_quote(raw)}: {err}"
        return None

    @staticmethod
    def is_valid(text: str) -> bool:
        """Kubernetes' `isURL`: whether Go's ParseRequestURI accepts the string."""
        try:
            _parse_request_uri(_encode(text))
        except URLError:
            return False
        return True

    def scheme(self) -> str:
        return _decode(self._parts.scheme)

    def host(self) -> str:
        """Host and port; an IPv6 address keeps its brackets."""
        return _decode(self._parts.host)

    def hostname(self) -> str:
        """The host without port or brackets."""
        return _decode(_split_host_port(self._parts.host)[0])

    def port(self) -> str:
        return _decode(_split_host_port(self._parts.host)[1])

    def escaped_path(self) -> str:
        return _decode(_escaped_path(self._parts))

    def query(self) -> dict[str, list[str]]:
        """The query as a map from names to values, both unescaped."""
        return _parse_query(self._parts.raw_query)

    def __eq__(self, other: object) -> bool:
        return type(other) is URL and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def __str__(self) -> str:
        """Go's URL.String()."""
        return _decode(self._text)

    def __repr__(self) -> str:
        return f"URL({str(self)!r})"


def _escaped_path(parts: _Parts) -> str:
    raw = parts.raw_path
    if raw and _valid_encoded(raw, _PATH):
        try:
            if _unescape(raw, "path") == parts.path:
                return raw
        except _ParseError:
            pass
    if parts.path == "*":
        return "*"
    return _escape(parts.path, _PATH)


def _escaped_fragment(parts: _Parts) -> str:
    raw = parts.raw_fragment
    if raw and _valid_encoded(raw, _FRAGMENT):
        try:
            if _unescape(raw, "fragment") == parts.fragment:
                return raw
        except _ParseError:
            pass
    return _escape(parts.fragment, _FRAGMENT)


def _format(parts: _Parts) -> str:
    out = []
    if parts.scheme:
        out.append(parts.scheme + ":")
    if parts.opaque:
        out.append(parts.opaque)
    else:
        if (parts.scheme or parts.host or parts.user is not None) and not (
            parts.omit_host and not parts.host and parts.user is None
        ):
            if parts.host or parts.path or parts.user is not None:
                out.append("//")
            if parts.user is not None:
                username, password = parts.user
                out.append(_escape(username, _USER_PASSWORD))
                if password is not None:
                    out.append(":" + _escape(password, _USER_PASSWORD))
                out.append("@")
            if parts.host:
                out.append(_escape(parts.host, _HOST))
        path = _escaped_path(parts)
        if path and path[0] != "/" and parts.host:
            out.append("/")
        if not out and ":" in path.partition("/")[0]:
            # keep a colon in the first segment from reading as a scheme
            out.append("./")
        out.append(path)
    if parts.force_query or parts.raw_query:
        out.append("?" + parts.raw_query)
    if parts.fragment:
        out.append("#" + _escaped_fragment(parts))
    return "".join(out)


def _parse_query(raw_query: str) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    if raw_query.count("&") + 1 > _MAX_QUERY_PARAMS:
        return result
    for pair in raw_query.split("&"):
        if ";" in pair or not pair:
            continue
        key, _, value = pair.partition("=")
        try:
            key = _unescape(key, "query")
            value = _unescape(value, "query")
        except _ParseError:
            continue
        result.setdefault(_decode(key), []).append(_decode(value))
    return result


# -- the CEL library ----------------------------------------------------------------------
URL_LIBRARY: Final = Library("kubernetes.urls")
_lib = URL_LIBRARY
_T: Final = URL.cel_type_name


def _scan_cost(text: object, *_args: object) -> int:
    # cel-go charges 0.1 unit per character scanned
    return math.ceil(len(text) * 0.1) if isinstance(text, str) else 0


@_lib.function("url", 1, result=_T, cost=_scan_cost, params=("string",))
def _url(text: object) -> URL:
    if type(text) is not str:
        raise no_such_overload("url", text)
    try:
        return URL.parse(text)
    except URLError as err:
        raise CELEvalError(err.reason) from None


@_lib.function("isURL", 1, result="bool", params=("string",))
def _is_url(text: object) -> bool:
    if type(text) is not str:
        raise no_such_overload("isURL", text)
    return URL.is_valid(text)


@_lib.member("getScheme", 0, receiver=URL, result="string")
def _get_scheme(u: URL) -> str:
    return u.scheme()


@_lib.member("getHost", 0, receiver=URL, result="string")
def _get_host(u: URL) -> str:
    return u.host()


@_lib.member("getHostname", 0, receiver=URL, result="string")
def _get_hostname(u: URL) -> str:
    return u.hostname()


@_lib.member("getPort", 0, receiver=URL, result="string")
def _get_port(u: URL) -> str:
    return u.port()


@_lib.member("getEscapedPath", 0, receiver=URL, result="string")
def _get_escaped_path(u: URL) -> str:
    return u.escaped_path()


@_lib.member("getQuery", 0, receiver=URL, result="map")
def _get_query(u: URL) -> dict[str, list[str]]:
    return u.query()
