"""Parsing of CEL timestamps (RFC 3339), durations (Go syntax) and time zones."""

from __future__ import annotations

import datetime
import re
import zoneinfo
from functools import lru_cache
from typing import Final

from policyext.cel.errors import CELEvalError
from policyext.cel.values import NANOS_PER_SECOND, Duration, Timestamp

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def parse_timestamp(text: str) -> Timestamp:
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise CELEvalError(f"invalid timestamp {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7) or ""
    try:
        dt = datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.UTC)
    except ValueError:
        raise CELEvalError(f"invalid timestamp {text!r}") from None
    seconds = int((dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)).total_seconds())
    nanos = int(frac.ljust(9, "0")) if frac else 0
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        offset = offset if m.group(9) == "+" else -offset
        return Timestamp((seconds - offset) * NANOS_PER_SECOND + nanos, offset)
    return Timestamp(seconds * NANOS_PER_SECOND + nanos)


_DURATION_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": NANOS_PER_SECOND,
    "m": 60 * NANOS_PER_SECOND,
    "h": 3600 * NANOS_PER_SECOND,
}
_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> Duration:
    """Go's time.ParseDuration syntax: `1h30m`, `-1.5s`, `100ms`, `0`."""
    body = text
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return Duration(0)
    if not body:
        raise CELEvalError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if m is None:
            raise CELEvalError(f"invalid duration {text!r}")
        number, unit = m.groups()
        whole, _, frac = number.partition(".")
        scale = _DURATION_UNITS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = m.end()
    if total > 2**63 - 1:
        raise CELEvalError(f"duration out of range: {text!r}")
    return Duration(sign * total)


_OFFSET: Final = re.compile(r"([+-]?)(\d{1,2}):(\d{2})")


@lru_cache(maxsize=256)
def time_zone(name: str) -> datetime.tzinfo:
    """An IANA zone name, `UTC`, or a fixed offset such as `+05:30` or `-08:00`."""
    m = _OFFSET.fullmatch(name)
    if m is not None:
        delta = datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return datetime.timezone(-delta if m.group(1) == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CELEvalError(f"unknown time zone {name!r}") from None
