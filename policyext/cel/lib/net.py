"""IP addresses and CIDR ranges: the Kubernetes CEL `ip` and `cidr` libraries.

Addresses parse as Go's `net/netip` parses them (`ParseAddr`, `ParsePrefix`), which is
stricter than Python's `ipaddress`: IPv4 octets with a leading zero are errors, an IPv6
`::` must stand for at least one group, a prefix length must be a plain decimal number.
On top of that Kubernetes rejects addresses with a zone (`fe80::1%eth0`) and IPv4-mapped
IPv6 addresses in either spelling (`::ffff:1.2.3.4`, `::ffff:102:304`). The cel-spec
conformance file `network_ext` instead accepts the hexadecimal spelling of a mapped address
as the IPv4 address it maps; Kubernetes, and cel-go, reject it, and so does this module.

`str()` gives Go's form: dotted IPv4, RFC 5952 IPv6 (lower case, the longest run of two or
more zero groups shortened to `::`), and `address/bits` for a CIDR, whose address keeps the
bits after the prefix (`cidr('10.1.2.3/8')` prints as `10.1.2.3/8`; `masked()` clears them).
Equality compares the address family too, and for a CIDR the unmasked address and the
prefix length.
"""

from __future__ import annotations

import math
from typing import ClassVar, Final

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.lib.strings import go_quote
from policyext.cel.values import no_such_overload

_HEX: Final = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}
_MAPPED_PREFIX: Final = 0xFFFF  # bits 32..47 of an IPv4-mapped IPv6 address


class NetError(ValueError):
    """A string that is not an acceptable address or range; `reason` is Kubernetes'
    message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AddressError(Exception):
    """Go netip's parse error: a message and the rest of the input where it occurred."""

    def __init__(self, msg: str, at: str = "") -> None:
        super().__init__(msg)
        self.msg = msg
        self.at = at

    def text(self, source: str) -> str:
        where = f" (at {go_quote(self.at)})" if self.at else ""
        return f"ParseAddr({go_quote(source)}): {self.msg}{where}"


class IP:
    """An IPv4 or IPv6 address without zone; immutable and hashable."""

    __slots__ = ("_v6", "_value")
    cel_type_name: ClassVar[str] = "net.IP"

    def __init__(self, value: int, *, v6: bool) -> None:
        """Low level (an address as an integer); prefer `IP.parse`."""
        self._value = value
        self._v6 = v6

    @classmethod
    def parse(cls, text: str) -> IP:
        """Parse as Kubernetes' `ip()` does; raises `NetError` (a `ValueError`)."""
        try:
            v6, value, zone = parse_address(text)
        except AddressError as err:
            raise NetError(
                f"IP Address {go_quote(text)} parse error during conversion from string: "
                f"{err.text(text)}"
            ) from None
        if zone:
            raise NetError(f"IP address {go_quote(text)} with zone value is not allowed")
        if v6 and value >> 32 == _MAPPED_PREFIX:
            raise NetError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
        return cls(value, v6=v6)

    @property
    def value(self) -> int:
        """The address as an unsigned integer."""
        return self._value

    @property
    def bit_length(self) -> int:
        return 128 if self._v6 else 32

    def family(self) -> int:
        return 6 if self._v6 else 4

    def is_unspecified(self) -> bool:
        return self._value == 0

    def is_loopback(self) -> bool:
        if self._v6:
            return self._value == 1
        return self._value >> 24 == 127

    def is_multicast(self) -> bool:
        if self._v6:
            return self._value >> 120 == 0xFF
        return self._value >> 28 == 0xE

    def is_link_local_multicast(self) -> bool:
        if self._v6:
            return self._value >> 112 & 0xFF0F == 0xFF02
        return self._value >> 8 == 0xE00000  # 224.0.0.0/24

    def is_link_local_unicast(self) -> bool:
        if self._v6:
            return self._value >> 112 & 0xFFC0 == 0xFE80
        return self._value >> 16 == 0xA9FE  # 169.254.0.0/16

    def is_global_unicast(self) -> bool:
        """Go's definition: anything but unspecified, IPv4 broadcast, loopback, multicast
        and link-local unicast (private ranges count as global)."""
        if not self._v6 and self._value == 0xFFFFFFFF:
            return False
        return not (
            self.is_unspecified()
            or self.is_loopback()
            or self.is_multicast()
            or self.is_link_local_unicast()
        )

    def __eq__(self, other: object) -> bool:
        return type(other) is IP and other._value == self._value and other._v6 == self._v6

    def __hash__(self) -> int:
        return hash((self._v6, self._value))

    def __str__(self) -> str:
        if not self._v6:
            return _format_v4(self._value)
        if self._value >> 32 == _MAPPED_PREFIX:
            return "::ffff:" + _format_v4(self._value & 0xFFFFFFFF)
        return _format_v6(self._value)

    def __repr__(self) -> str:
        return f"IP({str(self)!r})"


class CIDR:
    """An address and a prefix length; immutable and hashable."""

    __slots__ = ("_bits", "_ip")
    cel_type_name: ClassVar[str] = "net.CIDR"

    def __init__(self, ip: IP, bits: int) -> None:
        """Low level; prefer `CIDR.parse`."""
        self._ip = ip
        self._bits = bits

    @classmethod
    def parse(cls, text: str) -> CIDR:
        """Parse as Kubernetes' `cidr()` does; raises `NetError` (a `ValueError`)."""
        try:
            return _parse_prefix(text)
        except _PrefixError as err:
            raise NetError(
                "network address parse error during conversion from string: "
                "network address parse error during conversion from string: "
                f"netip.ParsePrefix({go_quote(text)}): {err}"
            ) from None

    def ip(self) -> IP:
        """The address as written, host bits included."""
        return self._ip

    def prefix_length(self) -> int:
        return self._bits

    def masked(self) -> CIDR:
        """The same prefix with the bits after it cleared."""
        ip = self._ip
        host_bits = ip.bit_length - self._bits
        return CIDR(IP(ip.value >> host_bits << host_bits, v6=ip._v6), self._bits)

    def contains_ip(self, ip: IP) -> bool:
        if ip._v6 != self._ip._v6:
            return False
        host_bits = ip.bit_length - self._bits
        return (ip.value ^ self._ip.value) >> host_bits == 0

    def contains_cidr(self, other: CIDR) -> bool:
        """Whether every address of `other` is in this range."""
        if other._ip._v6 != self._ip._v6 or other._bits < self._bits:
            return False
        return self.contains_ip(other._ip)

    def __eq__(self, other: object) -> bool:
        return type(other) is CIDR and other._ip == self._ip and other._bits == self._bits

    def __hash__(self) -> int:
        return hash((self._ip, self._bits))

    def __str__(self) -> str:
        return f"{self._ip}/{self._bits}"

    def __repr__(self) -> str:
        return f"CIDR({str(self)!r})"


# -- parsing (Go's net/netip) -------------------------------------------------------------
def parse_address(text: str) -> tuple[bool, int, str]:
    """Go's netip.ParseAddr: (is IPv6, value, zone), zones and mapped addresses included;
    raises AddressError."""
    for c in text:
        if c == ".":
            return False, _parse_v4(text), ""
        if c == ":":
            return _parse_v6(text)
        if c == "%":
            # an IPv6 address with a zone, but without the address
            raise AddressError("missing IPv6 address")
    raise AddressError("unable to parse IP")


def _v4_fields(s: str) -> list[int]:
    fields: list[int] = []
    value = 0
    digits = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and value == 0:
                raise AddressError("IPv4 field has octet with leading zero")
            value = value * 10 + ord(c) - 48
            digits += 1
            if value > 255:
                raise AddressError("IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise AddressError("IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise AddressError("IPv4 address too long")
            fields.append(value)
            value = 0
            digits = 0
        else:
            raise AddressError("unexpected character", s[i:])
    if len(fields) < 3:
        raise AddressError("IPv4 address too short")
    fields.append(value)
    return fields


def _parse_v4(s: str) -> int:
    a, b, c, d = _v4_fields(s)
    return a << 24 | b << 16 | c << 8 | d


def _parse_v6(text: str) -> tuple[bool, int, str]:
    s, percent, zone = text.partition("%")
    if percent and not zone:
        raise AddressError("zone must be a non-empty string")
    groups: list[int] = []  # 16-bit groups, an IPv4 tail counting as two
    ellipsis = -1  # the group index where `::` stands
    if s.startswith("::"):
        ellipsis = 0
        s = s[2:]
        if not s:
            return True, 0, zone
    while len(groups) < 8:
        off = 0
        acc = 0
        while off < len(s) and s[off] in _HEX:
            acc = acc << 4 | _HEX[s[off]]
            if off > 3:
                raise AddressError("each group must have 4 or less digits", s)
            off += 1
        if off == 0:
            raise AddressError("each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and len(groups) != 6:
                raise AddressError(
                    "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if len(groups) + 2 > 8:
                raise AddressError(
                    "too many hex fields to fit an embedded IPv4 at the end of the address", s
                )
            v4 = _parse_v4(s)
            groups += [v4 >> 16, v4 & 0xFFFF]
            s = ""
            break
        groups.append(acc)
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise AddressError("unexpected character, want colon", s)
        if len(s) == 1:
            raise AddressError("colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise AddressError("multiple :: in address", s)
            ellipsis = len(groups)
            s = s[1:]
            if not s:
                break
    if s:
        raise AddressError("trailing garbage after address", s)
    if len(groups) < 8:
        if ellipsis < 0:
            raise AddressError("address string too short")
        groups[ellipsis:ellipsis] = [0] * (8 - len(groups))
    elif ellipsis >= 0:
        raise AddressError("the :: must expand to at least one field of zeros")
    value = 0
    for g in groups:
        value = value << 16 | g
    return True, value, zone


class _PrefixError(Exception):
    pass


def _parse_prefix(text: str) -> CIDR:
    slash = text.rfind("/")
    if slash < 0:
        raise _PrefixError("no '/'")
    addr_text, bits_text = text[:slash], text[slash + 1 :]
    try:
        v6, value, zone = parse_address(addr_text)
    except AddressError as err:
        raise _PrefixError(err.text(addr_text)) from None
    if v6 and zone:
        raise _PrefixError("IPv6 zones cannot be present in a prefix")
    # a sign, leading zeros and anything but ASCII digits are errors
    if (
        not bits_text
        or not all("0" <= c <= "9" for c in bits_text)
        or (len(bits_text) > 1 and bits_text[0] == "0")
    ):
        raise _PrefixError(f"bad bits after slash: {go_quote(bits_text)}")
    # Go's Atoi refuses numbers beyond int64, with the same message
    bits = int(bits_text) if len(bits_text) <= 20 else 2**64
    if bits > 2**63 - 1:
        raise _PrefixError(f"bad bits after slash: {go_quote(bits_text)}")
    if bits > (128 if v6 else 32):
        raise _PrefixError("prefix length out of range")
    if v6 and value >> 32 == _MAPPED_PREFIX:
        raise NetError(
            "network address parse error during conversion from string: "
            f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed"
        )
    return CIDR(IP(value, v6=v6), bits)


# -- formatting (Go's net/netip) ----------------------------------------------------------
def _format_v4(value: int) -> str:
    return f"{value >> 24}.{value >> 16 & 0xFF}.{value >> 8 & 0xFF}.{value & 0xFF}"


def _format_v6(value: int) -> str:
    groups = [value >> (112 - 16 * i) & 0xFFFF for i in range(8)]
    # the first longest run of two or more zero groups becomes "::"
    best_start, best_len = -1, 1
    i = 0
    while i < 8:
        j = i
        while j < 8 and groups[j] == 0:
            j += 1
        if j - i > best_len:
            best_start, best_len = i, j - i
        i = j + 1 if j > i else i + 1
    if best_start < 0:
        return ":".join(f"{g:x}" for g in groups)
    head = ":".join(f"{g:x}" for g in groups[:best_start])
    tail = ":".join(f"{g:x}" for g in groups[best_start + best_len :])
    return f"{head}::{tail}"


# -- the CEL library ----------------------------------------------------------------------
NET_LIBRARY: Final = Library("kubernetes.net")
_lib = NET_LIBRARY


def _scan_cost(text: object, *_args: object) -> int:
    # cel-go charges 0.1 unit per character scanned
    return math.ceil(len(text) * 0.1) if isinstance(text, str) else 0


def _double_scan_cost(text: object, *_args: object) -> int:
    # parsing, then comparing the canonical form with the input
    return math.ceil(len(text) * 0.2) if isinstance(text, str) else 0


def _cidr_bytes(cidr: object) -> int:
    return math.ceil(cidr._bits / 8) if isinstance(cidr, CIDR) else 0


def _contains_ip_cost(cidr: object, other: object) -> int:
    # Kubernetes: compare up to the prefix's bytes, plus parsing a string argument
    return math.ceil(2 * _cidr_bytes(cidr) * 0.1) + _scan_cost(other)


def _contains_cidr_cost(cidr: object, other: object) -> int:
    size = _cidr_bytes(cidr)
    return math.ceil(2 * size * 0.1) + math.ceil(size * 0.1) + 1 + _scan_cost(other)


def _ip_or_error(text: str) -> IP:
    try:
        return IP.parse(text)
    except NetError as err:
        raise CELEvalError(err.reason) from None


def _cidr_or_error(text: str) -> CIDR:
    try:
        return CIDR.parse(text)
    except NetError as err:
        raise CELEvalError(err.reason) from None


@_lib.function("ip", 1, result=IP.cel_type_name, cost=_scan_cost, params=("string",))
def _ip(text: object) -> IP:
    if type(text) is not str:
        raise no_such_overload("ip", text)
    return _ip_or_error(text)


@_lib.function("isIP", 1, result="bool", cost=_scan_cost, params=("string",))
def _is_ip(text: object) -> bool:
    if type(text) is not str:
        raise no_such_overload("isIP", text)
    try:
        IP.parse(text)
    except NetError:
        return False
    return True


@_lib.function("ip.isCanonical", 1, result="bool", cost=_double_scan_cost, params=("string",))
def _ip_is_canonical(text: object) -> bool:
    if type(text) is not str:
        raise no_such_overload("ip.isCanonical", text)
    return str(_ip_or_error(text)) == text


@_lib.member("family", 0, receiver=IP, result="int")
def _family(ip: IP) -> int:
    return ip.family()


@_lib.member("isUnspecified", 0, receiver=IP, result="bool")
def _is_unspecified(ip: IP) -> bool:
    return ip.is_unspecified()


@_lib.member("isLoopback", 0, receiver=IP, result="bool")
def _is_loopback(ip: IP) -> bool:
    return ip.is_loopback()


@_lib.member("isLinkLocalMulticast", 0, receiver=IP, result="bool")
def _is_link_local_multicast(ip: IP) -> bool:
    return ip.is_link_local_multicast()


@_lib.member("isLinkLocalUnicast", 0, receiver=IP, result="bool")
def _is_link_local_unicast(ip: IP) -> bool:
    return ip.is_link_local_unicast()


@_lib.member("isGlobalUnicast", 0, receiver=IP, result="bool")
def _is_global_unicast(ip: IP) -> bool:
    return ip.is_global_unicast()


@_lib.function("cidr", 1, result=CIDR.cel_type_name, cost=_scan_cost, params=("string",))
def _cidr(text: object) -> CIDR:
    if type(text) is not str:
        raise no_such_overload("cidr", text)
    return _cidr_or_error(text)


@_lib.function("isCIDR", 1, result="bool", cost=_scan_cost, params=("string",))
def _is_cidr(text: object) -> bool:
    if type(text) is not str:
        raise no_such_overload("isCIDR", text)
    try:
        CIDR.parse(text)
    except NetError:
        return False
    return True


@_lib.member(
    "containsIP", 1, receiver=CIDR, result="bool", cost=_contains_ip_cost, params=("string|net.IP",)
)
def _contains_ip(cidr: CIDR, other: object) -> bool:
    if type(other) is str:
        return cidr.contains_ip(_ip_or_error(other))
    if type(other) is IP:
        return cidr.contains_ip(other)
    raise no_such_overload("containsIP", cidr, other)


@_lib.member(
    "containsCIDR",
    1,
    receiver=CIDR,
    result="bool",
    cost=_contains_cidr_cost,
    params=("string|net.CIDR",),
)
def _contains_cidr(cidr: CIDR, other: object) -> bool:
    if type(other) is str:
        return cidr.contains_cidr(_cidr_or_error(other))
    if type(other) is CIDR:
        return cidr.contains_cidr(other)
    raise no_such_overload("containsCIDR", cidr, other)


@_lib.member("ip", 0, receiver=CIDR, result=IP.cel_type_name)
def _cidr_ip(cidr: CIDR) -> IP:
    return cidr.ip()


@_lib.member("masked", 0, receiver=CIDR, result=CIDR.cel_type_name)
def _masked(cidr: CIDR) -> CIDR:
    return cidr.masked()


@_lib.member("prefixLength", 0, receiver=CIDR, result="int")
def _prefix_length(cidr: CIDR) -> int:
    return cidr.prefix_length()
