"""Kubernetes' format library: named validators of strings (`format.dns1123Label()`,
`format.named('uuid')`), each with `validate(s)`, which is `optional.none()` for a valid
string and otherwise an optional list of what is wrong, worded as Kubernetes words it.

The rules and messages are those of k8s.io/apimachinery's validation (the DNS names, label
keys and values) and of kube-openapi's string formats (uuid, byte, date, datetime), and
Go's url.ParseRequestURI for `uri`; the regular expressions are matched whole (Go's `^...$`
does not allow a trailing newline, as Python's `$` would).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar, Final

from policyext.cel.civil import days_in_month
from policyext.cel.functions import Library
from policyext.cel.lib.url import URL
from policyext.cel.values import OPTIONAL_NONE, Optional, no_such_overload

NAMED_FORMAT_LIBRARY: Final = Library("named formats")
_lib = NAMED_FORMAT_LIBRARY

Validator = Callable[[str], list[str]]


class NamedFormat:
    """A named validator: what `format.dns1123Label()` and `format.named(name)` give."""

    __slots__ = ("name", "validator")
    cel_type_name: ClassVar[str] = "kubernetes.NamedFormat"

    def __init__(self, name: str, validator: Validator) -> None:
        self.name = name
        self.validator = validator

    def __repr__(self) -> str:
        return f"format.{self.name}()"


# -- the messages of k8s.io/apimachinery ----------------------------------------------------
def _too_long(limit: int, unit: str) -> str:
    return f"must be no more than {limit} {unit}"


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _size(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))  # Go counts bytes


_LABEL: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN: Final = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_KEY: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE: Final = "(" + _KEY + ")?"
_LABEL_RE: Final = re.compile(_LABEL)
_SUBDOMAIN_RE: Final = re.compile(_SUBDOMAIN)
_DNS1035_RE: Final = re.compile(_DNS1035)
_KEY_RE: Final = re.compile(_KEY)
_VALUE_RE: Final = re.compile(_VALUE)

_LABEL_MESSAGE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-',"
    " and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-'"
    " or '.', and must start and end with an alphanumeric character"
)
_DNS1035_MESSAGE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with"
    " an alphabetic character, and end with an alphanumeric character"
)
_KEY_MESSAGE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with"
    " an alphanumeric character"
)
_VALUE_MESSAGE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_'"
    " or '.', and must start and end with an alphanumeric character"
)


def _dns1123_label(s: str) -> list[str]:
    errors = [_too_long(63, "characters")] if _size(s) > 63 else []
    if not _LABEL_RE.fullmatch(s):
        if _SUBDOMAIN_RE.fullmatch(s):
            errors.append("must not contain dots")  # a subdomain of the right length
        else:
            errors.append(_regex_error(_LABEL_MESSAGE, _LABEL, "my-name", "123-abc"))
    return errors


def _dns1123_subdomain(s: str, unit: str = "characters") -> list[str]:
    errors = [_too_long(253, unit)] if _size(s) > 253 else []
    if not _SUBDOMAIN_RE.fullmatch(s):
        errors.append(_regex_error(_SUBDOMAIN_MESSAGE, _SUBDOMAIN, "example.com"))
    return errors


def _dns1035_label(s: str) -> list[str]:
    errors = [_too_long(63, "characters")] if _size(s) > 63 else []
    if not _DNS1035_RE.fullmatch(s):
        errors.append(_regex_error(_DNS1035_MESSAGE, _DNS1035, "my-name", "abc-123"))
    return errors


def _as_prefix(validate: Validator) -> Validator:
    """The validator of a name prefix (generateName): a trailing dash is allowed. As
    Kubernetes does it, the dash and the character before it become one letter."""

    def validate_prefix(s: str) -> list[str]:
        if len(s) > 1 and s.endswith("-"):
            s = s[:-2] + "a"
        return validate(s)

    return validate_prefix


def _qualified_name(s: str) -> list[str]:
    errors: list[str] = []
    parts = s.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_KEY_MESSAGE, _KEY, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in _dns1123_subdomain(prefix, "bytes"))
    if not name:
        errors.append("name part must be non-empty")
    elif _size(name) > 63:
        errors.append("name part " + _too_long(63, "bytes"))
    if not _KEY_RE.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_KEY_MESSAGE, _KEY, "MyName", "my.name", "123-abc")
        )
    return errors


def _label_value(s: str) -> list[str]:
    errors = [_too_long(63, "bytes")] if _size(s) > 63 else []
    if not _VALUE_RE.fullmatch(s):
        errors.append(_regex_error(_VALUE_MESSAGE, _VALUE, "MyValue", "my_value", "12345"))
    return errors


# -- kube-openapi's string formats, and Go's url.ParseRequestURI ----------------------------
def _uri(s: str) -> list[str]:
    error = URL.request_uri_error(s)
    return [] if error is None else [error]


_UUID_RE: Final = re.compile(
    "[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
)
_BASE64_RE: Final = re.compile(
    "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})"
)
_DATE_RE: Final = re.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})")
# what follows the `T` of a date-time; the fraction's `.` is any character, as upstream
_TIME_RE: Final = re.compile("([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|[+-][0-9]{2}:[0-9]{2})")


def _uuid(s: str) -> list[str]:
    return [] if _UUID_RE.fullmatch(s) else ["does not match the UUID format"]


def _byte(s: str) -> list[str]:
    return [] if _BASE64_RE.fullmatch(s) else ["invalid base64"]


def _is_date(s: str) -> bool:
    """Go's time.Parse with the layout `2006-01-02`."""
    m = _DATE_RE.fullmatch(s)
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    return 1 <= month <= 12 and 1 <= day <= days_in_month(year, month)


def _date(s: str) -> list[str]:
    return [] if _is_date(s) else ["invalid date"]


def _datetime(s: str) -> list[str]:
    """kube-openapi's date-time test: a date, a `t` (any case), then a time of day."""
    parts = s.lower().split("t")
    valid = _size(s) >= 4 and len(parts) >= 2 and _is_date(parts[0])
    if valid:
        m = _TIME_RE.fullmatch(parts[1])
        valid = m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"
    return [] if valid else ["invalid datetime"]


_FORMATS: Final[dict[str, Validator]] = {
    "dns1123Label": _dns1123_label,
    "dns1123Subdomain": _dns1123_subdomain,
    "dns1035Label": _dns1035_label,
    "qualifiedName": _qualified_name,
    "dns1123LabelPrefix": _as_prefix(_dns1123_label),
    "dns1123SubdomainPrefix": _as_prefix(_dns1123_subdomain),
    "dns1035LabelPrefix": _as_prefix(_dns1035_label),
    "labelValue": _label_value,
    "uri": _uri,
    "uuid": _uuid,
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}
NAMED_FORMATS: Final = {name: NamedFormat(name, check) for name, check in _FORMATS.items()}
_T: Final = NamedFormat.cel_type_name


def _constant(format_: NamedFormat) -> Callable[[], NamedFormat]:
    return lambda: format_


for _name, _format in NAMED_FORMATS.items():
    _lib.function(f"format.{_name}", 0, result=_T)(_constant(_format))


@_lib.function("format.named", 1, result="optional_type", params=("string",))
def _named(name: object) -> Optional:
    if type(name) is not str:
        raise no_such_overload("format.named", name)
    found = NAMED_FORMATS.get(name)
    return OPTIONAL_NONE if found is None else Optional(found)


def _scan_cost(_format: object, text: object) -> int:
    return len(text) // 10 if type(text) is str else 0  # 0.1 unit per character scanned


@_lib.member(
    "validate", 1, receiver=NamedFormat, result="optional_type", cost=_scan_cost, params=("string",)
)
def _validate(format_: NamedFormat, text: object) -> Optional:
    if type(text) is not str:
        raise no_such_overload("validate", format_, text)
    errors = format_.validator(text)
    return Optional(errors) if errors else OPTIONAL_NONE
