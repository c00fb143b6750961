"""Semantic versions and the Kubernetes CEL semver library.

Expected values were checked against Kubernetes' semver library (blang/semver/v4).
"""

from __future__ import annotations

import pytest

from policyext.cel import CELError, compile
from policyext.cel.lib.semver import SEMVER_LIBRARY, Semver, SemverError
from policyext.cel.stdlib import STANDARD_LIBRARY

LIBRARIES = (STANDARD_LIBRARY, SEMVER_LIBRARY)


def evaluate(source: str) -> object:
    return compile(source, libraries=LIBRARIES).evaluate({})


@pytest.mark.parametrize(
    ("text", "parts", "printed"),
    [
        ("1.2.3", (1, 2, 3), "1.2.3"),
        ("0.0.0", (0, 0, 0), "0.0.0"),
        ("1.0.0-alpha", (1, 0, 0), "1.0.0-alpha"),
        ("1.0.0-alpha.1", (1, 0, 0), "1.0.0-alpha.1"),
        ("1.0.0-0.3.7", (1, 0, 0), "1.0.0-0.3.7"),
        ("1.0.0-x-y.0a", (1, 0, 0), "1.0.0-x-y.0a"),
        ("1.0.0+20130313144700", (1, 0, 0), "1.0.0+20130313144700"),
        ("1.0.0-beta+exp.sha.5114f85", (1, 0, 0), "1.0.0-beta+exp.sha.5114f85"),
        ("1.2.3-a+b-c", (1, 2, 3), "1.2.3-a+b-c"),
        ("18446744073709551615.0.0", (18446744073709551615, 0, 0), "18446744073709551615.0.0"),
    ],
)
def test_a_valid_version_parses_into_its_parts(
    text: str, parts: tuple[int, int, int], printed: str
) -> None:
    v = Semver.parse(text)
    assert ((v.major, v.minor, v.patch), str(v)) == (parts, printed)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "Version string empty"),
        ("1.0", "No Major.Minor.Patch elements found"),
        ("v1.0.0", 'Invalid character(s) found in major number "v1"'),
        ("01.0.0", 'Major number must not contain leading zeroes "01"'),
        ("1.01.0", 'Minor number must not contain leading zeroes "01"'),
        ("1.0.01", 'Patch number must not contain leading zeroes "01"'),
        ("1..0", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("1.0.0-", "Prerelease is empty"),
        ("1.0.0-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.0.0-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.0.0+", "Build meta data is empty"),
        ("1.0.0+a..b", "Build meta data is empty"),
        ("1.0.0+ü", 'Invalid character(s) found in build meta data "ü"'),
        (
            "18446744073709551616.0.0",
            'strconv.ParseUint: parsing "18446744073709551616": value out of range',
        ),
        ("1.2.3.4", 'Invalid character(s) found in patch number "3.4"'),
        (" 1.2.3", 'Invalid character(s) found in major number " 1"'),
    ],
)
def test_an_invalid_version_is_rejected_with_blang_semvers_reason(text: str, reason: str) -> None:
    with pytest.raises(SemverError) as raised:
        Semver.parse(text)
    assert raised.value.reason == reason


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("v1.2.3", "1.2.3"),
        ("1.0", "1.0.0"),
        ("1", "1.0.0"),
        ("v1", "1.0.0"),
        ("01.01.01", "1.1.1"),
        ("1.2.00-rc.1", "1.2.0-rc.1"),
        ("1.2.03+build", "1.2.3+build"),
        ("00.0.0", "0.0.0"),
    ],
)
def test_normalizing_drops_a_v_and_leading_zeros_and_fills_missing_parts(
    text: str, normalized: str
) -> None:
    assert str(Semver.parse(text, normalize=True)) == normalized


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1.0-rc", "short version cannot contain PreRelease/Build meta data"),
        ("1+b", "short version cannot contain PreRelease/Build meta data"),
        ("vv1.0.0", 'Invalid character(s) found in major number "0v1"'),
        ("", 'strconv.ParseUint: parsing "": invalid syntax'),
    ],
)
def test_normalizing_still_rejects_what_cannot_be_a_version(text: str, reason: str) -> None:
    with pytest.raises(SemverError) as raised:
        Semver.parse(text, normalize=True)
    assert raised.value.reason == reason


# semver.org's precedence example, in increasing order
PRECEDENCE = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "2.0.0",
]


@pytest.mark.parametrize(("i", "j"), [(i, j) for i in range(11) for j in range(11)])
def test_versions_compare_by_semver_precedence(i: int, j: int) -> None:
    a, b = Semver.parse(PRECEDENCE[i]), Semver.parse(PRECEDENCE[j])
    expected = (i > j) - (i < j)
    assert (a.compare(b), a < b, a == b) == (expected, i < j, i == j)


def test_build_metadata_is_ignored_by_equality_and_ordering() -> None:
    a, b = Semver.parse("1.0.0+a"), Semver.parse("1.0.0+b")
    assert (a == b, hash(a) == hash(b), a.compare(b)) == (True, True, 0)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('semver("1.2.3").major()', 1),
        ('semver("1.2.3").minor()', 2),
        ('semver("1.2.3").patch()', 3),
        ('semver("18446744073709551615.0.0").major()', -1),
        ('isSemver("1.0.0")', True),
        ('isSemver("hello")', False),
        ('isSemver("v1.0")', False),
        ('isSemver("v1.0", true)', True),
        ('isSemver("v1.0", false)', False),
        ('semver("v1.0.0", true) == semver("1.0.0")', True),
        ('semver("1.0", true) == semver("1.0.0")', True),
        ('semver("01.01.01", true) == semver("1.1.1")', True),
        ('semver("1.2.3").compareTo(semver("1.2.3"))', 0),
        ('semver("1.2.3").compareTo(semver("2.0.0"))', -1),
        ('semver("1.2.3").compareTo(semver("0.1.2"))', 1),
        ('semver("1.2.3").isGreaterThan(semver("1.2.3-rc.1"))', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True),
        ('semver("1.0.0+a") == semver("1.0.0+b")', True),
        ('semver("1.0.0") == semver("1.0.1")', False),
    ],
)
def test_the_cel_functions_behave_as_in_kubernetes(source: str, expected: object) -> None:
    result = evaluate(source)
    assert (result, type(result)) == (expected, type(expected))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('semver("200K")', "No Major.Minor.Patch elements found"),
        ('semver("Three")', "No Major.Minor.Patch elements found"),
        ('semver("1.0.0-")', "Prerelease is empty"),
        ('semver("1.0", false)', "No Major.Minor.Patch elements found"),
    ],
)
def test_semver_of_an_invalid_string_is_an_evaluation_error(source: str, message: str) -> None:
    with pytest.raises(CELError, match=message):
        evaluate(source)


@pytest.mark.parametrize(
    "source",
    [
        "semver(1)",
        'semver("1.0.0", 1)',
        'isSemver("1.0.0", "true")',
        'semver("1.0.0").compareTo("1.0.0")',
        'semver("1.0.0").isLessThan(1)',
    ],
)
def test_arguments_of_the_wrong_type_are_no_such_overload(source: str) -> None:
    # refused when compiled where the types are known, an evaluation error where not
    with pytest.raises(CELError, match=r"no (such|matching) overload"):
        evaluate(source)
