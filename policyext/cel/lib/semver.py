"""Semantic versions and the Kubernetes CEL semver library.

Parsing follows github.com/blang/semver/v4, which Kubernetes uses: exactly
`MAJOR.MINOR.PATCH`, numbers without leading zeros and within uint64, dot-separated
pre-release identifiers after `-` (numeric ones without leading zeros) and build metadata
after `+`, both of ASCII letters, digits and `-`. With `normalize`, as in Kubernetes 1.33
and later, one leading `v` is dropped, leading zeros are removed from each of the first
three dot-separated parts and a missing minor or patch becomes 0 (`v1.2` is `1.2.0`).

Precedence is semver 2.0's: numeric pre-release identifiers sort below alphanumeric ones,
a version without pre-release sorts above one with, and build metadata is ignored, for
equality as well. `major()`, `minor()` and `patch()` convert the uint64 to a CEL int the way
Go does, so a number of 2**63 or more comes back negative.
"""

from __future__ import annotations

import math
from typing import ClassVar, Final

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.lib.strings import go_quote
from policyext.cel.values import no_such_overload

_UINT64_MAX: Final = 2**64 - 1
_NUMBERS: Final = frozenset("0123456789")
_ALPHANUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")

# A pre-release identifier: (is numeric, number, text)
PreRelease = tuple[bool, int, str]


class SemverError(ValueError):
    """A string that is not a semantic version; `reason` is blang/semver's message."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"invalid semantic version {text!r}: {reason}")
        self.reason = reason


_quote = go_quote


class Semver:
    """A parsed semantic version; immutable, hashable, ordered by semver precedence."""

    __slots__ = ("build", "major", "minor", "patch", "pre")
    cel_type_name: ClassVar[str] = "kubernetes.Semver"

    major: int
    minor: int
    patch: int
    pre: tuple[PreRelease, ...]
    build: tuple[str, ...]

    def __init__(
        self,
        major: int,
        minor: int,
        patch: int,
        pre: tuple[PreRelease, ...] = (),
        build: tuple[str, ...] = (),
    ) -> None:
        self.major = major
        self.minor = minor
        self.patch = patch
        self.pre = pre
        self.build = build

    @classmethod
    def parse(cls, text: str, *, normalize: bool = False) -> Semver:
        """Parse `text`; raises `SemverError` (a `ValueError`) when it is not a version."""
        if normalize:
            text = _normalized(text)
        return _parse(text)

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by semver precedence (build metadata does not count)."""
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return 1 if a > b else -1
        return _compare_pre(self.pre, other.pre)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Semver:
            return False
        return (self.major, self.minor, self.patch, self.pre) == (
            other.major,
            other.minor,
            other.patch,
            other.pre,
        )

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __lt__(self, other: Semver) -> bool:
        if type(other) is not Semver:
            return NotImplemented
        return self.compare(other) < 0

    def __le__(self, other: Semver) -> bool:
        if type(other) is not Semver:
            return NotImplemented
        return self.compare(other) <= 0

    def __gt__(self, other: Semver) -> bool:
        if type(other) is not Semver:
            return NotImplemented
        return self.compare(other) > 0

    def __ge__(self, other: Semver) -> bool:
        if type(other) is not Semver:
            return NotImplemented
        return self.compare(other) >= 0

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(n) if numeric else s for numeric, n, s in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def _compare_pre(a: tuple[PreRelease, ...], b: tuple[PreRelease, ...]) -> int:
    if not a or not b:
        # a release sorts after its pre-releases
        return (not a) - (not b)
    for (a_num, a_n, a_s), (b_num, b_n, b_s) in zip(a, b, strict=False):
        if a_num != b_num:
            return -1 if a_num else 1
        x: int | str = a_n if a_num else a_s
        y: int | str = b_n if b_num else b_s
        if x != y:
            return 1 if x > y else -1  # type: ignore[operator]
    return (len(a) > len(b)) - (len(a) < len(b))


def _only(s: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in s)


def _number(text: str, part: str, what: str) -> int:
    if not _only(part, _NUMBERS):
        raise SemverError(text, f"Invalid character(s) found in {what} number {_quote(part)}")
    if len(part) > 1 and part[0] == "0":
        raise SemverError(
            text, f"{what.capitalize()} number must not contain leading zeroes {_quote(part)}"
        )
    if not part:
        raise SemverError(text, 'strconv.ParseUint: parsing "": invalid syntax')
    # 2**64 has 20 digits: longer strings are out of range without converting them
    value = int(part) if len(part) <= 20 else _UINT64_MAX + 1
    if value > _UINT64_MAX:
        raise SemverError(text, f"strconv.ParseUint: parsing {_quote(part)}: value out of range")
    return value


def _parse(text: str) -> Semver:
    if not text:
        raise SemverError(text, "Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError(text, "No Major.Minor.Patch elements found")
    major = _number(text, parts[0], "major")
    minor = _number(text, parts[1], "minor")
    rest, plus, build_text = parts[2].partition("+")
    patch_text, minus, pre_text = rest.partition("-")
    patch = _number(text, patch_text, "patch")
    pre: list[PreRelease] = []
    if minus:
        for ident in pre_text.split("."):
            pre.append(_pre_release(text, ident))
    build: list[str] = []
    if plus:
        for ident in build_text.split("."):
            if not ident:
                raise SemverError(text, "Build meta data is empty")
            if not _only(ident, _ALPHANUM):
                raise SemverError(
                    text, f"Invalid character(s) found in build meta data {_quote(ident)}"
                )
            build.append(ident)
    return Semver(major, minor, patch, tuple(pre), tuple(build))


def _pre_release(text: str, ident: str) -> PreRelease:
    if not ident:
        raise SemverError(text, "Prerelease is empty")
    if _only(ident, _NUMBERS):
        if len(ident) > 1 and ident[0] == "0":
            raise SemverError(
                text,
                f"Numeric PreRelease version must not contain leading zeroes {_quote(ident)}",
            )
        value = int(ident) if len(ident) <= 20 else _UINT64_MAX + 1
        if value > _UINT64_MAX:
            raise SemverError(
                text, f"strconv.ParseUint: parsing {_quote(ident)}: value out of range"
            )
        return (True, value, "")
    if _only(ident, _ALPHANUM):
        return (False, 0, ident)
    raise SemverError(text, f"Invalid character(s) found in prerelease {_quote(ident)}")


def _normalized(text: str) -> str:
    """Kubernetes' normalizeAndParse, before the parse."""
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            if not stripped or stripped[0] not in _NUMBERS:
                stripped = "0" + stripped
            parts[i] = stripped
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError(text, "short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# -- the CEL library ----------------------------------------------------------------------
SEMVER_LIBRARY: Final = Library("kubernetes.semver")
_lib = SEMVER_LIBRARY
_T: Final = Semver.cel_type_name


def _scan_cost(text: object, *_args: object) -> int:
    # cel-go charges 0.1 unit per character scanned
    return math.ceil(len(text) * 0.1) if isinstance(text, str) else 0


def _parse_for_cel(name: str, text: object, normalize: object) -> Semver:
    if type(text) is not str or type(normalize) is not bool:
        raise no_such_overload(name, text, normalize)
    try:
        return Semver.parse(text, normalize=normalize)
    except SemverError as err:
        raise CELEvalError(err.reason) from None


def _is_semver_for_cel(name: str, text: object, normalize: object) -> bool:
    if type(text) is not str or type(normalize) is not bool:
        raise no_such_overload(name, text, normalize)
    try:
        Semver.parse(text, normalize=normalize)
    except SemverError:
        return False
    return True


@_lib.function("semver", 1, result=_T, cost=_scan_cost, params=("string",))
def _semver(text: object) -> Semver:
    if type(text) is not str:
        raise no_such_overload("semver", text)
    return _parse_for_cel("semver", text, False)


@_lib.function(
    "semver",
    2,
    result=_T,
    cost=_scan_cost,
    params=(
        "string",
        "bool",
    ),
)
def _semver_normalized(text: object, normalize: object) -> Semver:
    return _parse_for_cel("semver", text, normalize)


@_lib.function("isSemver", 1, result="bool", cost=_scan_cost, params=("string",))
def _is_semver(text: object) -> bool:
    if type(text) is not str:
        raise no_such_overload("isSemver", text)
    return _is_semver_for_cel("isSemver", text, False)


@_lib.function(
    "isSemver",
    2,
    result="bool",
    cost=_scan_cost,
    params=(
        "string",
        "bool",
    ),
)
def _is_semver_normalized(text: object, normalize: object) -> bool:
    return _is_semver_for_cel("isSemver", text, normalize)


def _as_int64(n: int) -> int:
    # Go's int64(uint64) conversion wraps around
    return n - 2**64 if n >= 2**63 else n


@_lib.member("major", 0, receiver=Semver, result="int")
def _major(v: Semver) -> int:
    return _as_int64(v.major)


@_lib.member("minor", 0, receiver=Semver, result="int")
def _minor(v: Semver) -> int:
    return _as_int64(v.minor)


@_lib.member("patch", 0, receiver=Semver, result="int")
def _patch(v: Semver) -> int:
    return _as_int64(v.patch)


def _other(name: str, v: Semver, other: object) -> Semver:
    if type(other) is not Semver:
        raise no_such_overload(name, v, other)
    return other


@_lib.member("isGreaterThan", 1, receiver=Semver, result="bool", params=("kubernetes.Semver",))
def _is_greater_than(v: Semver, other: object) -> bool:
    return v.compare(_other("isGreaterThan", v, other)) > 0


@_lib.member("isLessThan", 1, receiver=Semver, result="bool", params=("kubernetes.Semver",))
def _is_less_than(v: Semver, other: object) -> bool:
    return v.compare(_other("isLessThan", v, other)) < 0


@_lib.member("compareTo", 1, receiver=Semver, result="int", params=("kubernetes.Semver",))
def _compare_to(v: Semver, other: object) -> int:
    return v.compare(_other("compareTo", v, other))
