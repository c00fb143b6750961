"""The proleptic Gregorian calendar in plain integer arithmetic, for any year.

Python's datetime stops at the years 1 and 9999, but a timestamp in CEL's range read in a
time zone west or east of UTC (`timestamp('0001-01-01T00:00:00Z').getFullYear('-01:00')`)
or written with an offset (`'0000-12-31T23:00:00-01:00'`) has its wall-clock time in the
year 0 or 10000, which Kubernetes (Go's time package) reads and writes without trouble.
"""

from __future__ import annotations

from typing import Final, NamedTuple

SECONDS_PER_DAY: Final = 86_400
# 0000-03-01 to 1970-01-01: the calendar's 400-year cycles are counted from a March 1st
_EPOCH_SHIFT: Final = 719_468
_DAYS_PER_ERA: Final = 146_097


class CivilTime(NamedTuple):
    """A wall-clock time: month 1-12, day 1-31, day_of_year 0-365, weekday 0 (Sunday)-6."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    day_of_year: int
    weekday: int


def is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the date (negative before it)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + 9 if month <= 2 else month - 3) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * _DAYS_PER_ERA + day_of_era - _EPOCH_SHIFT


def civil_from_seconds(seconds: int) -> CivilTime:
    """The wall-clock time `seconds` after 1970-01-01T00:00:00 (any sign, any size)."""
    days, second_of_day = divmod(seconds, SECONDS_PER_DAY)
    shifted = days + _EPOCH_SHIFT
    era = shifted // _DAYS_PER_ERA
    day_of_era = shifted - era * _DAYS_PER_ERA
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_march_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_from_march = (5 * day_of_march_year + 2) // 153
    day = day_of_march_year - (153 * month_from_march + 2) // 5 + 1
    month = month_from_march + 3 if month_from_march < 10 else month_from_march - 9
    year = year_of_era + era * 400 + (month <= 2)
    hour, rest = divmod(second_of_day, 3600)
    minute, second = divmod(rest, 60)
    return CivilTime(
        year=year,
        month=month,
        day=day,
        hour=hour,
        minute=minute,
        second=second,
        day_of_year=days - days_from_civil(year, 1, 1),
        weekday=(days + 4) % 7,  # 1970-01-01 was a Thursday
    )
