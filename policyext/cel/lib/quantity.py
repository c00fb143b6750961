"""Kubernetes resource quantities (`resource.Quantity`) and their CEL library.

Parsing, comparison and arithmetic follow k8s.io/apimachinery exactly, including the parts a
rule can observe that depend on how apimachinery stores a value rather than on the value:

- apimachinery keeps a quantity either as a small `int64 * 10**scale` or as an arbitrary
  precision decimal. `isInteger()`/`asInteger()` succeed only for the first form at a
  non-negative scale, so `quantity("1000m").isInteger()` and `quantity("1Pi").isInteger()`
  are false although both values are whole numbers. `Quantity` records which form
  apimachinery would use (`_dec`) and the decimal exponent (`_exp`) for that reason, and
  `asApproximateFloat()` multiplies the same mantissa by the same power of ten.
- bare suffixes parse as zero (`"Ki"`, `"m"`, `"-"`, `"."`), as apimachinery does
  (kubernetes/apimachinery#165), although its CEL documentation calls `quantity('Mi')` an
  error; `"Ei"` and the other inputs that reach apimachinery's decimal parser without any
  digit are errors.
- values finer than a nanounit round up, away from zero; binary-suffixed values are capped
  at 2**63-1.

Deliberate differences: values are immutable (apimachinery's CEL `add` and `compareTo` can
mutate their operands), `value()`/`milli_value()` never wrap around int64, `str()` prints
`1000E` where apimachinery's `String()` drops the suffix of decimal values of 1e21 and more,
and a non-zero quantity above 10**10000 is rejected rather than computed.

The engine's hot path uses the Python API directly: `Quantity.parse("16Gi")`,
`Quantity.from_int`, `Quantity.from_milli`, `+`, `-`, comparisons, `value()`,
`milli_value()` and `str()`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Final

from policyext.cel.errors import CELEvalError
from policyext.cel.functions import Library
from policyext.cel.values import INT64_MAX, INT64_MIN, no_such_overload

# The three serialization formats of apimachinery; a quantity remembers the one it was
# written in and is printed back in it.
DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_ERR_FORMAT: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
_ERR_SUFFIX: Final = "unable to parse quantity's suffix"
_ERR_TOO_LARGE: Final = "quantity is too large"

# Decimal exponents are kept within this bound so that no operation builds a huge integer.
_MAX_EXPONENT: Final = 10_000
_NANO: Final = -9
_BINARY_MAX: Final = INT64_MAX
# Python refuses to convert longer digit strings in one step
_DIGIT_CHUNK: Final = 4000

_DIGITS: Final = frozenset("0123456789")
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")

# suffix -> (base, exponent, format)
_SUFFIXES: Final[dict[str, tuple[int, int, str]]] = {
    "": (10, 0, DECIMAL_SI),
    "n": (10, -9, DECIMAL_SI),
    "u": (10, -6, DECIMAL_SI),
    "m": (10, -3, DECIMAL_SI),
    "k": (10, 3, DECIMAL_SI),
    "M": (10, 6, DECIMAL_SI),
    "G": (10, 9, DECIMAL_SI),
    "T": (10, 12, DECIMAL_SI),
    "P": (10, 15, DECIMAL_SI),
    "E": (10, 18, DECIMAL_SI),
    "Ki": (2, 10, BINARY_SI),
    "Mi": (2, 20, BINARY_SI),
    "Gi": (2, 30, BINARY_SI),
    "Ti": (2, 40, BINARY_SI),
    "Pi": (2, 50, BINARY_SI),
    "Ei": (2, 60, BINARY_SI),
}
# The suffixes the fast path of `Quantity.parse` handles: decimal ones by exponent, binary
# ones by (power of two, most digits apimachinery keeps in an int64).
_FAST_DECIMAL: Final = {s: e for s, (b, e, _) in _SUFFIXES.items() if b == 10 and s}
_FAST_BINARY: Final = {"Ki": (10, 11), "Mi": (20, 8), "Gi": (30, 5), "Ti": (40, 2)}

_DECIMAL_SUFFIX_OF: Final = {e: s for s, (b, e, _) in _SUFFIXES.items() if b == 10}
_BINARY_SUFFIX_OF: Final = {e // 10: s for s, (b, e, _) in _SUFFIXES.items() if b == 2}
_BINARY_SUFFIX_OF[0] = ""


class QuantityError(ValueError):
    """A string that is not a quantity; `reason` is apimachinery's message."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"invalid quantity {text!r}: {reason}")
        self.reason = reason


class Quantity:
    """An exact Kubernetes quantity: `unscaled * 10**exp`, in apimachinery's format.

    Immutable and hashable; `==` and the ordering operators compare values
    (`Quantity.parse("1Ki") == Quantity.parse("1024")`).
    """

    __slots__ = ("_dec", "_exp", "_format", "_unscaled")
    cel_type_name: ClassVar[str] = "kubernetes.Quantity"

    _unscaled: int
    _exp: int
    _dec: bool
    _format: str

    def __init__(self, unscaled: int, exp: int, dec: bool, fmt: str) -> None:
        """Low level: prefer `parse`, `from_int` and `from_milli`. `dec` says whether
        apimachinery would hold this value as an arbitrary precision decimal."""
        self._unscaled = unscaled
        self._exp = exp
        self._dec = dec
        self._format = fmt

    # -- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse a quantity as apimachinery's `ParseQuantity` does.

        Raises `QuantityError` (a `ValueError`) with apimachinery's reason.
        """
        # Quantities are immutable and node and pod specs repeat a few strings ("4",
        # "16Gi"), so parsed values are remembered, up to a bound.
        q = _PARSED.get(text)
        if q is None:
            q = _parse(text)
            if len(_PARSED) < _PARSED_MAX:
                _PARSED[text] = q
        return q

    @classmethod
    def from_int(cls, value: int) -> Quantity:
        """The integer `value`, in DecimalSI format (apimachinery's `NewQuantity`)."""
        return cls(value, 0, not INT64_MIN <= value <= INT64_MAX, DECIMAL_SI)

    @classmethod
    def from_milli(cls, value: int) -> Quantity:
        """`value` thousandths, in DecimalSI format (apimachinery's `NewMilliQuantity`)."""
        return cls(value, -3, not INT64_MIN <= value <= INT64_MAX, DECIMAL_SI)

    # -- accessors ----------------------------------------------------------------------
    @property
    def format(self) -> str:
        """`DecimalSI`, `BinarySI` or `DecimalExponent`: how `str()` writes the value."""
        return self._format

    def sign(self) -> int:
        """-1, 0 or 1."""
        u = self._unscaled
        return (u > 0) - (u < 0)

    def value(self) -> int:
        """The value rounded to an integer away from zero (apimachinery's `Value`)."""
        return _scaled(self._unscaled, self._exp, 0)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (apimachinery's
        `MilliValue`)."""
        return _scaled(self._unscaled, self._exp, -3)

    def as_int64(self) -> int | None:
        """The value as an int64 when apimachinery's `AsInt64` gives one, else None:
        only quantities held as int64 * 10**scale with scale >= 0 qualify."""
        if self._dec or self._exp < 0:
            return None
        u, e = self._unscaled, self._exp
        if e == 0 or u == 0:
            return u
        if e > 18:
            return None
        v = u * 10**e
        return v if INT64_MIN <= v <= INT64_MAX else None

    def approximate_float(self) -> float:
        """apimachinery's `AsApproximateFloat64`: mantissa times a power of ten, in
        floating point; out of range gives +-inf."""
        try:
            base = float(self._unscaled)
        except OverflowError:
            base = math.inf if self._unscaled > 0 else -math.inf
        if self._exp == 0:
            return base
        return base * _go_pow10(self._exp)

    def compare(self, other: Quantity) -> int:
        """-1, 0 or 1 as self is less than, equal to or greater than other."""
        a, b = _aligned(self, other)
        return (a > b) - (a < b)

    # -- arithmetic (apimachinery's Add and Sub) ----------------------------------------
    def __add__(self, other: Quantity) -> Quantity:
        if type(other) is not Quantity:
            return NotImplemented
        # the common case of summing requests: two int64 amounts at the same scale
        if self._exp == other._exp and self._unscaled and not (self._dec or other._dec):
            total = self._unscaled + other._unscaled
            if INT64_MIN <= total <= INT64_MAX:
                return Quantity(total, self._exp, False, self._format)
        return _combine(self, other, negate=False)

    def __sub__(self, other: Quantity) -> Quantity:
        if type(other) is not Quantity:
            return NotImplemented
        return _combine(self, other, negate=True)

    # -- comparison and hashing ---------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if type(other) is not Quantity:
            return False
        if self._exp == other._exp:
            return self._unscaled == other._unscaled
        return self.compare(other) == 0

    def __hash__(self) -> int:
        # equal values hash equally whatever their exponent: hash the value modulo
        # Python's hash prime, as Python hashes rationals
        modulus = 2**61 - 1
        return hash(self._unscaled % modulus * pow(10, self._exp, modulus) % modulus)

    def __lt__(self, other: Quantity) -> bool:
        if type(other) is not Quantity:
            return NotImplemented
        if self._exp == other._exp:
            return self._unscaled < other._unscaled
        return self.compare(other) < 0

    def __le__(self, other: Quantity) -> bool:
        if type(other) is not Quantity:
            return NotImplemented
        if self._exp == other._exp:
            return self._unscaled <= other._unscaled
        return self.compare(other) <= 0

    def __gt__(self, other: Quantity) -> bool:
        if type(other) is not Quantity:
            return NotImplemented
        if self._exp == other._exp:
            return self._unscaled > other._unscaled
        return self.compare(other) > 0

    def __ge__(self, other: Quantity) -> bool:
        if type(other) is not Quantity:
            return NotImplemented
        if self._exp == other._exp:
            return self._unscaled >= other._unscaled
        return self.compare(other) >= 0

    # -- printing -----------------------------------------------------------------------
    def __str__(self) -> str:
        """The canonical Kubernetes form in the quantity's format: `1500m`, `1536Mi`,
        `12e6`."""
        return _canonical(self)

    def __repr__(self) -> str:
        return f"Quantity({_canonical(self)!r})"


# -- parsing ------------------------------------------------------------------------------
_PARSED: Final[dict[str, Quantity]] = {}
_PARSED_MAX: Final = 4096


def _parse(text: str) -> Quantity:
    # Fast path for the forms that fill node status and pod specs ("4", "3800m", "16Gi",
    # "110"), which apimachinery stores as int64 * 10**scale too.
    last = text[-1:]
    if last in _DIGITS:
        if len(text) <= 18 and text.isdigit() and text.isascii():
            return Quantity(int(text), 0, False, DECIMAL_SI)
    elif last == "i":
        binary = _FAST_BINARY.get(text[-2:])
        if binary is not None:
            num = text[:-2]
            if len(num) <= binary[1] and num.isdigit() and num.isascii() and num[0] != "0":
                return Quantity(int(num) << binary[0], 0, False, BINARY_SI)
    else:
        exp = _FAST_DECIMAL.get(last)
        if exp is not None:
            num = text[:-1]
            if len(num) <= 18 and num.isdigit() and num.isascii():
                return Quantity(int(num), exp, False, DECIMAL_SI)
    return _parse_slow(text)


def _parse_slow(text: str) -> Quantity:
    """apimachinery's ParseQuantity, step by step."""
    if not text:
        raise QuantityError(text, _ERR_FORMAT)
    positive, value, num, denom, suffix = _scan(text)
    found = _SUFFIXES.get(suffix)
    if found is None:
        found = _exponent_suffix(text, suffix)
    base, exponent, fmt = found

    if base == 10:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    else:
        scale = 0
        # apimachinery only takes the int64 path for binary values without a fraction
        precision = -1 if denom else 15 - len(num) - exponent * 3 // 10 - 1
    if precision >= 0:
        scale = _int32(scale - len(denom))
        if scale >= _NANO:
            mantissa = int(num + denom)
            if base == 2:
                mantissa <<= exponent
            _check_size(text, mantissa, scale)
            return Quantity(mantissa if positive else -mantissa, scale, False, fmt)
    return _parse_decimal(text, value, base, exponent, fmt)


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """Split `text` into sign, number (as written), integer digits without leading zeros,
    fraction digits and suffix, as apimachinery's scanner does."""
    end = len(text)
    pos = 0
    positive = True
    if text[0] == "-":
        positive = False
        pos = 1
    elif text[0] == "+":
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    i = pos
    while i < end and text[i] in _DIGITS:
        i += 1
    num = text[pos:i] or "0"
    if i >= end:
        return positive, text, num, "", ""
    pos = i
    denom = ""
    if text[pos] == ".":
        pos += 1
        i = pos
        while i < end and text[i] in _DIGITS:
            i += 1
        denom = text[pos:i]
        if i >= end:
            return positive, text, num, denom, ""
        pos = i
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(text, _ERR_FORMAT)
    return positive, value, num, denom, text[suffix_start:]


def _exponent_suffix(text: str, suffix: str) -> tuple[int, int, str]:
    """`e3`, `E-2`: a decimal exponent, parsed as a Go int64 and truncated to int32."""
    rest = suffix[1:]
    digits = rest[1:] if rest[:1] in ("+", "-") else rest
    if suffix[:1] not in ("e", "E") or not digits or any(c not in _DIGITS for c in digits):
        raise QuantityError(text, _ERR_SUFFIX)
    exponent = int(suffix[1:])
    if not INT64_MIN <= exponent <= INT64_MAX:
        raise QuantityError(text, _ERR_SUFFIX)
    return 10, _int32(exponent), DECIMAL_EXPONENT


def _parse_decimal(text: str, value: str, base: int, exponent: int, fmt: str) -> Quantity:
    """The arbitrary precision path: round up to a nanounit, cap binary values."""
    negative = value[:1] == "-"
    digits = value.lstrip("+-")
    whole, _, fraction = digits.partition(".")
    if not whole and not fraction:
        raise QuantityError(text, _ERR_NUMERIC)
    magnitude = _int_from_digits(whole + fraction)
    exp = -len(fraction)
    if base == 10:
        exp = _int32(exp + exponent)
    else:
        magnitude <<= exponent
    if magnitude == 0:
        # apimachinery does not round zero, so it keeps the exponent it was written with
        return Quantity(0, max(-_MAX_EXPONENT, min(_MAX_EXPONENT, exp)), True, fmt)
    if exp >= _NANO:
        _check_size(text, magnitude, exp)
        magnitude *= 10 ** (exp - _NANO)
    else:
        shift = _NANO - exp
        if shift > len(whole) + len(fraction) + 20:
            # far below a nanounit: rounds up to exactly one
            magnitude = 1
        else:
            q, r = divmod(magnitude, 10**shift)
            magnitude = q + (r != 0)
    exp = _NANO
    if fmt == BINARY_SI:
        if magnitude > _BINARY_MAX * 10**9:
            magnitude, exp = _BINARY_MAX, 0
        elif magnitude < 10**9:
            # apimachinery switches fractions of one to DecimalSI to avoid rounding
            fmt = DECIMAL_SI
    return Quantity(-magnitude if negative else magnitude, exp, True, fmt)


def _check_size(text: str, mantissa: int, exp: int) -> None:
    # bit_length * 0.3 slightly underestimates the digits, which is fine for a bound
    if mantissa and exp > 0 and exp + mantissa.bit_length() * 3 // 10 > _MAX_EXPONENT:
        raise QuantityError(text, _ERR_TOO_LARGE)


def _int32(v: int) -> int:
    """Go's int32 conversion: wrap around."""
    return (v + 2**31) % 2**32 - 2**31


def _int_from_digits(digits: str) -> int:
    if len(digits) <= _DIGIT_CHUNK:
        return int(digits)
    head = _int_from_digits(digits[:-_DIGIT_CHUNK])
    tail: int = head * 10**_DIGIT_CHUNK + int(digits[-_DIGIT_CHUNK:])
    return tail


def _digits_of(n: int) -> str:
    """`str(n)` for integers of any size."""
    if -(10**_DIGIT_CHUNK) < n < 10**_DIGIT_CHUNK:
        return str(n)
    sign = "-" if n < 0 else ""
    head, tail = divmod(abs(n), 10**_DIGIT_CHUNK)
    return sign + _digits_of(head) + str(tail).zfill(_DIGIT_CHUNK)


# -- arithmetic ---------------------------------------------------------------------------
def _in_int64(v: int) -> bool:
    return INT64_MIN <= v <= INT64_MAX


def _int64_add(a: int, a_exp: int, b: int, b_exp: int) -> tuple[int, int] | None:
    """apimachinery's int64Amount.Add: align to the smaller scale; None on overflow."""
    if b == 0:
        return a, a_exp
    if a == 0:
        return b, b_exp
    if a_exp == b_exp:
        c = a + b
        return (c, a_exp) if _in_int64(c) else None
    if a_exp > b_exp:
        diff = a_exp - b_exp
        if diff > 18:
            return None
        c = a * 10**diff
        if not _in_int64(c) or not _in_int64(c + b):
            return None
        return c + b, b_exp
    diff = b_exp - a_exp
    if diff > 18:
        return None
    c = b * 10**diff
    if not _in_int64(c) or not _in_int64(a + c):
        return None
    return a + c, a_exp


def _combine(q: Quantity, other: Quantity, *, negate: bool) -> Quantity:
    """q + other or q - other with the rules of apimachinery's Quantity.Add and Sub: a zero
    receiver takes the other's format; int64 amounts stay int64 amounts unless the result
    overflows."""
    fmt = other._format if q._unscaled == 0 else q._format
    b = other._unscaled
    if not q._dec and not other._dec:
        # Go negates an int64 with wrap-around: -(-2**63) stays -2**63
        int_b = (b if b == INT64_MIN else -b) if negate else b
        summed = _int64_add(q._unscaled, q._exp, int_b, other._exp)
        if summed is not None:
            return Quantity(summed[0], summed[1], False, fmt)
    if negate:
        b = -b
    exp = min(q._exp, other._exp)
    total = 0
    # a zero term may carry any exponent: never raise 10 to it
    if q._unscaled:
        total += q._unscaled * 10 ** (q._exp - exp)
    if b:
        total += b * 10 ** (other._exp - exp)
    return Quantity(total, exp, True, fmt)


def _aligned(a: Quantity, b: Quantity) -> tuple[int, int]:
    """The two mantissas at a common exponent."""
    ae, be = a._exp, b._exp
    if ae == be:
        return a._unscaled, b._unscaled
    if a._unscaled == 0 or b._unscaled == 0:
        return a._unscaled, b._unscaled
    if ae > be:
        return a._unscaled * 10 ** (ae - be), b._unscaled
    return a._unscaled, b._unscaled * 10 ** (be - ae)


def _scaled(unscaled: int, exp: int, target: int) -> int:
    """unscaled * 10**(exp - target), rounded away from zero."""
    if exp >= target:
        if exp == target or not unscaled:
            return unscaled
        scaled: int = unscaled * 10 ** (exp - target)
        return scaled
    divisor: int = 10 ** (target - exp)
    q, r = divmod(abs(unscaled), divisor)
    q += r != 0
    return -q if unscaled < 0 else q


# Go's math.Pow10: products of correctly rounded table entries, so large powers can
# differ from the correctly rounded value in the last bit, and so do the results here.
_POW10: Final = tuple(float(f"1e{i}") for i in range(32))
_POW10_POS32: Final = tuple(float(f"1e{32 * i}") for i in range(10))
_POW10_NEG32: Final = tuple(float(f"1e-{32 * i}") for i in range(11))


def _go_pow10(n: int) -> float:
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


# -- printing -----------------------------------------------------------------------------
def _strip_tens(m: int, e: int) -> tuple[int, int]:
    if m == 0:
        return 0, 0
    while m % 10 == 0:
        m //= 10
        e += 1
    return m, e


def _canonical(q: Quantity) -> str:
    """apimachinery's CanonicalizeBytes: the largest suffix that keeps the number whole."""
    u = q._unscaled
    if u == 0:
        return "0"
    fmt = q._format
    if fmt == BINARY_SI:
        e = q._exp
        bound = 1024 * 10**-e if e < 0 else 1024
        small = -bound < (u if e < 0 else u * 10**e) < bound
        whole = e >= 0 or u % 10**-e == 0
        if small or not whole:
            fmt = DECIMAL_SI
        else:
            return _binary_canonical(_scaled(u, e, 0))
    m, e = _strip_tens(u, q._exp)
    r = e % 3
    m, e = m * 10**r, e - r
    if fmt == DECIMAL_EXPONENT or e < -9:
        return _digits_of(m) + (f"e{e}" if e else "")
    if e > 18:
        m, e = m * 10 ** (e - 18), 18
    return _digits_of(m) + _DECIMAL_SUFFIX_OF[e]


def _binary_canonical(value: int) -> str:
    m, k = abs(value), 0
    while m >= 1024 and m % 1024 == 0:
        m //= 1024
        k += 1
    if k > 6:
        m, k = m * 1024 ** (k - 6), 6
    return _digits_of(-m if value < 0 else m) + _BINARY_SUFFIX_OF[k]


# -- the CEL library ----------------------------------------------------------------------
QUANTITY_LIBRARY: Final = Library("kubernetes.quantity")
_lib = QUANTITY_LIBRARY
_T: Final = Quantity.cel_type_name


def _scan_cost(text: object, *_args: object) -> int:
    # cel-go charges 0.1 unit per character scanned
    return math.ceil(len(text) * 0.1) if isinstance(text, str) else 0


def parse_or_error(text: str) -> Quantity:
    """`Quantity.parse` for CEL: a bad string is an evaluation error."""
    try:
        return Quantity.parse(text)
    except QuantityError as err:
        raise CELEvalError(err.reason) from None


@_lib.function("quantity", 1, result=_T, cost=_scan_cost, params=("string",))
def _quantity(text: object) -> Quantity:
    if type(text) is not str:
        raise no_such_overload("quantity", text)
    return parse_or_error(text)


@_lib.function("isQuantity", 1, result="bool", cost=_scan_cost, params=("string",))
def _is_quantity(text: object) -> bool:
    if type(text) is not str:
        raise no_such_overload("isQuantity", text)
    try:
        Quantity.parse(text)
    except QuantityError:
        return False
    return True


# Kubernetes declares `sign` as a global function only: `sign(q)`; its checker refuses
# `q.sign()` (whatever its documentation shows), and so does ours.
@_lib.function("sign", 1, result="int", params=(_T,))
def _sign_global(q: object) -> int:
    if type(q) is not Quantity:
        raise no_such_overload("sign", q)
    return q.sign()


@_lib.member("isInteger", 0, receiver=Quantity, result="bool")
def _is_integer(q: Quantity) -> bool:
    return q.as_int64() is not None


@_lib.member("asInteger", 0, receiver=Quantity, result="int")
def _as_integer(q: Quantity) -> int:
    v = q.as_int64()
    if v is None:
        raise CELEvalError("cannot convert value to integer")
    return v


@_lib.member("asApproximateFloat", 0, receiver=Quantity, result="double")
def _as_approximate_float(q: Quantity) -> float:
    return q.approximate_float()


def _operand(name: str, q: Quantity, other: object) -> Quantity:
    if type(other) is Quantity:
        return other
    if type(other) is int:
        # Kubernetes converts an int operand with NewQuantity(n, DecimalExponent)
        return Quantity(other, 0, False, DECIMAL_EXPONENT)
    raise no_such_overload(name, q, other)


@_lib.member("add", 1, receiver=Quantity, result=_T, params=("kubernetes.Quantity|int",))
def _add_member(q: Quantity, other: object) -> Quantity:
    return q + _operand("add", q, other)


@_lib.member("sub", 1, receiver=Quantity, result=_T, params=("kubernetes.Quantity|int",))
def _sub_member(q: Quantity, other: object) -> Quantity:
    return q - _operand("sub", q, other)


def _other_quantity(name: str, q: Quantity, other: object) -> Quantity:
    if type(other) is not Quantity:
        raise no_such_overload(name, q, other)
    return other


@_lib.member("isGreaterThan", 1, receiver=Quantity, result="bool", params=("kubernetes.Quantity",))
def _is_greater_than(q: Quantity, other: object) -> bool:
    return q.compare(_other_quantity("isGreaterThan", q, other)) > 0


@_lib.member("isLessThan", 1, receiver=Quantity, result="bool", params=("kubernetes.Quantity",))
def _is_less_than(q: Quantity, other: object) -> bool:
    return q.compare(_other_quantity("isLessThan", q, other)) < 0


@_lib.member("compareTo", 1, receiver=Quantity, result="int", params=("kubernetes.Quantity",))
def _compare_to(q: Quantity, other: object) -> int:
    return q.compare(_other_quantity("compareTo", q, other))
