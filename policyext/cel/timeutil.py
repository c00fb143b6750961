"""Parsing of CEL timestamps (RFC 3339), durations (Go syntax) and time zones, as
Kubernetes (cel-go, on Go's time package) reads them."""

from __future__ import annotations

import datetime
import os
import re
import zoneinfo
from functools import cache, lru_cache
from typing import Final

from policyext.cel.civil import CivilTime, civil_from_seconds, days_from_civil, days_in_month
from policyext.cel.errors import CELEvalError
from policyext.cel.values import INT64_MAX, INT64_MIN, NANOS_PER_SECOND, Duration, Timestamp

# Go's time.Parse with the RFC 3339 layout: an hour of one or two digits, a fraction after
# `.` or `,` of any length (the first nine digits count), `Z` (upper case only) or an
# offset `+hh:mm` up to 24:60. ASCII digits only (`\d` would take other scripts' digits).
_RFC3339: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
    r"(?:Z|([+-])([0-9]{2}):([0-9]{2}))"
)


def parse_timestamp(text: str) -> Timestamp:
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise CELEvalError(f"invalid timestamp {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if not (
        1 <= month <= 12
        and 1 <= day <= days_in_month(year, month)
        and hour < 24
        and minute < 60
        and second < 60
    ):
        raise CELEvalError(f"invalid timestamp {text!r}")
    frac = m.group(7)
    nanos = int(frac[:9].ljust(9, "0")) if frac else 0
    offset = 0
    sign = m.group(8)
    if sign:
        offset_hours, offset_minutes = int(m.group(9)), int(m.group(10))
        if offset_hours > 24 or offset_minutes > 60:
            raise CELEvalError(f"invalid timestamp {text!r}")
        offset = (offset_hours * 60 + offset_minutes) * 60
        if sign == "-":
            offset = -offset
    days = days_from_civil(year, month, day)
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    return Timestamp(seconds * NANOS_PER_SECOND + nanos, offset)


_DURATION_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": NANOS_PER_SECOND,
    "m": 60 * NANOS_PER_SECOND,
    "h": 3600 * NANOS_PER_SECOND,
}
# a number (digits, a point, digits: either may be missing, not both) and its unit
_DURATION_PART: Final = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_TWO_63: Final = 2**63


def parse_duration(text: str) -> Duration:
    """Go's time.ParseDuration: `1h30m`, `-1.5s`, `100ms`, `0`; from -2^63 to 2^63-1
    nanoseconds; a fraction scaled in floating point as Go does (`0.1h`)."""
    body = text
    negative = False
    if body[:1] in ("+", "-"):
        negative = body[0] == "-"
        body = body[1:]
    if body == "0":
        return Duration(0)
    if not body:
        raise CELEvalError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        whole, frac, unit = m.groups()  # type: ignore[union-attr]
        pos = m.end()  # type: ignore[union-attr]
        scale = _DURATION_UNITS.get(unit)
        if (not whole and not frac) or scale is None:
            raise CELEvalError(f"invalid duration {text!r}")
        value = int(whole or "0")
        if value > _TWO_63 // scale:
            raise CELEvalError(f"invalid duration {text!r}")
        value *= scale
        if frac:
            value += _fraction(frac, scale)
        total += value
        if value > _TWO_63 or total > _TWO_63:
            raise CELEvalError(f"invalid duration {text!r}")
    if negative:
        return Duration(-total)
    if total > INT64_MAX:
        raise CELEvalError(f"invalid duration {text!r}")
    return Duration(total)


def _fraction(digits: str, unit: int) -> int:
    """The nanoseconds of a fraction of a unit as Go computes them: the digits that fit in
    63 bits, times the unit over ten to their number, in doubles, truncated."""
    numerator = 0
    scale = 1.0
    for c in digits:
        widened = numerator * 10 + ord(c) - 48
        if numerator > INT64_MAX // 10 or widened > _TWO_63:
            break  # Go ignores the digits past what fits
        numerator = widened
        scale *= 10
    return int(float(numerator) * (float(unit) / scale)) if numerator else 0


def zone_offset(name: str, instant: Timestamp) -> int:
    """Seconds east of UTC, at the instant, of a time zone argument as cel-go reads one:
    without a colon, an IANA name (`''` and `UTC` are UTC, `Local` the zone of this
    process); with one, hours and minutes as two signed integers (`+05:30`, `-8:00`, any
    size: `+25:00` is a day and an hour ahead)."""
    colon = name.find(":")
    if colon < 0:
        zone = _named_zone(name)
        return zone if isinstance(zone, int) else _offset_at(zone, instant)
    hours, minutes = _go_atoi(name[:colon], name), _go_atoi(name[colon + 1 :], name)
    total = hours * 60 - minutes if name.startswith("-") else hours * 60 + minutes
    # Go computes in int64 nanoseconds (time.Minute), wrapping, then whole seconds
    nanos = _wrap64(_wrap64(total) * 60 * NANOS_PER_SECOND)
    whole = abs(nanos) // NANOS_PER_SECOND * (-1 if nanos < 0 else 1)  # Go's truncation
    return int(float(whole) + float(nanos - whole * NANOS_PER_SECOND) / 1e9)


def local_time(instant: Timestamp, zone: str) -> CivilTime:
    """The wall-clock time of the instant in the zone (a year before 1 or after 9999 too)."""
    seconds = instant.nanos // NANOS_PER_SECOND
    return civil_from_seconds(seconds + zone_offset(zone, instant))


def _wrap64(value: int) -> int:
    return (value + _TWO_63) % (2 * _TWO_63) - _TWO_63


_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


def _go_atoi(text: str, zone: str) -> int:
    if not _GO_INT.fullmatch(text) or not INT64_MIN <= int(text) <= INT64_MAX:
        raise CELEvalError(f"unknown time zone {zone!r}")
    return int(text)


@lru_cache(maxsize=256)
def _named_zone(name: str) -> datetime.tzinfo | int:
    """The zone of an IANA name, or its offset when it is fixed (UTC)."""
    if name in ("", "UTC"):
        return 0
    if name == "Local":
        return _process_zone()
    if ".." in name or name[0] in "/\\":
        raise CELEvalError(f"unknown time zone {name!r}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CELEvalError(f"unknown time zone {name!r}") from None


@cache
def _process_zone() -> datetime.tzinfo | int:
    """This process's local zone, found as Go finds it: $TZ (empty: UTC; a leading `:`
    dropped; a path or a name), else /etc/localtime, else UTC."""
    tz = os.environ.get("TZ")
    try:
        if tz is None:
            with open("/etc/localtime", "rb") as handle:
                return zoneinfo.ZoneInfo.from_file(handle)
        tz = tz.removeprefix(":")
        if tz.startswith("/"):
            with open(tz, "rb") as handle:
                return zoneinfo.ZoneInfo.from_file(handle)
        if tz and tz != "UTC":
            return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    return 0


def _offset_at(zone: datetime.tzinfo, instant: Timestamp) -> int:
    utc = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
        microseconds=instant.nanos // 1000
    )
    try:
        offset = utc.astimezone(zone).utcoffset()
    except OverflowError:
        # at the ends of the range the local date leaves datetime's years: the zone's
        # offset there is that of its first (or last) rule
        edge = datetime.datetime(1, 1, 2) if utc.year < 5000 else datetime.datetime(9999, 12, 30)
        offset = zone.utcoffset(edge)
    return int(offset.total_seconds()) if offset is not None else 0
