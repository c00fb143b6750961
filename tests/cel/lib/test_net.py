"""IP addresses and CIDR ranges: the Kubernetes CEL `ip` and `cidr` libraries.

Expected values were checked against Kubernetes' library (Go's net/netip underneath). The
behaviour the cel-spec file `network_ext` describes is covered here too, except its
`ipv4_equals_ipv6` cases, which accept `::ffff:c0a8:1` where Kubernetes and cel-go refuse
IPv4-mapped addresses in any spelling.
"""

from __future__ import annotations

import pytest

from policyext.cel import CELError, compile
from policyext.cel.lib.net import CIDR, IP, NET_LIBRARY, NetError
from policyext.cel.stdlib import STANDARD_LIBRARY

LIBRARIES = (STANDARD_LIBRARY, NET_LIBRARY)


def evaluate(source: str) -> object:
    return compile(source, libraries=LIBRARIES).evaluate({})


# -- addresses ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "printed", "family"),
    [
        ("192.168.0.1", "192.168.0.1", 4),
        ("0.0.0.0", "0.0.0.0", 4),
        ("255.255.255.255", "255.255.255.255", 4),
        ("2001:db8::68", "2001:db8::68", 6),
        ("2001:DB8::68", "2001:db8::68", 6),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1", 6),
        ("::", "::", 6),
        ("::1", "::1", 6),
        ("1::", "1::", 6),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3", 6),
        ("1:0:0:2:0:0:3:4", "1::2:0:0:3:4", 6),
        ("1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7", 6),
        ("::1.2.3.4", "::102:304", 6),
        ("64:ff9b::192.0.2.33", "64:ff9b::c000:221", 6),
    ],
)
def test_an_address_parses_and_prints_in_gos_canonical_form(
    text: str, printed: str, family: int
) -> None:
    ip = IP.parse(text)
    assert (str(ip), ip.family()) == (printed, family)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("192.168.0.1.0", 'ParseAddr("192.168.0.1.0"): IPv4 address too long'),
        ("192.168.0", 'ParseAddr("192.168.0"): IPv4 address too short'),
        ("01.2.3.4", 'ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero'),
        ("1.2.3.256", 'ParseAddr("1.2.3.256"): IPv4 field has value >255'),
        ("1..2.3", 'ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
        ("1.2.3.4 ", 'ParseAddr("1.2.3.4 "): unexpected character (at " ")'),
        (
            "2001:db8:::68",
            'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit '
            '(at ":68")',
        ),
        ("1::2::3", 'ParseAddr("1::2::3"): multiple :: in address (at ":3")'),
        ("1:2:3:4:5:6:7", 'ParseAddr("1:2:3:4:5:6:7"): address string too short'),
        (
            "1:2:3:4:5:6:7::8",
            'ParseAddr("1:2:3:4:5:6:7::8"): the :: must expand to at least one field of zeros',
        ),
        ("12345::", 'ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")'),
        ("1:2", 'ParseAddr("1:2"): address string too short'),
        ("fe80::1%", 'ParseAddr("fe80::1%"): zone must be a non-empty string'),
        ("%eth0", 'ParseAddr("%eth0"): missing IPv6 address'),
        ("localhost", 'ParseAddr("localhost"): unable to parse IP'),
        ("", 'ParseAddr(""): unable to parse IP'),
        ("1.2.3.4/8", 'ParseAddr("1.2.3.4/8"): unexpected character (at "/8")'),
    ],
)
def test_an_invalid_address_is_rejected_with_netips_reason(text: str, reason: str) -> None:
    with pytest.raises(NetError) as raised:
        IP.parse(text)
    prefix = f'IP Address "{text}" parse error during conversion from string: '
    assert raised.value.reason == prefix + reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("fe80::1%en0", 'IP address "fe80::1%en0" with zone value is not allowed'),
        ("::ffff:192.168.0.1", 'IPv4-mapped IPv6 address "::ffff:192.168.0.1" is not allowed'),
        ("::ffff:c0a8:1", 'IPv4-mapped IPv6 address "::ffff:c0a8:1" is not allowed'),
        ("0:0:0:0:0:ffff:0:0", 'IPv4-mapped IPv6 address "0:0:0:0:0:ffff:0:0" is not allowed'),
    ],
)
def test_zones_and_ipv4_mapped_addresses_are_refused_as_in_kubernetes(
    text: str, reason: str
) -> None:
    with pytest.raises(NetError) as raised:
        IP.parse(text)
    assert raised.value.reason == reason


@pytest.mark.parametrize(
    ("text", "unspecified", "loopback", "ll_multicast", "ll_unicast", "global_unicast"),
    [
        ("0.0.0.0", True, False, False, False, False),
        ("127.0.0.1", False, True, False, False, False),
        ("127.255.0.9", False, True, False, False, False),
        ("1.2.3.4", False, False, False, False, True),
        ("192.168.0.1", False, False, False, False, True),
        ("255.255.255.255", False, False, False, False, False),
        ("224.0.0.1", False, False, True, False, False),
        ("224.0.1.1", False, False, False, False, False),
        ("169.254.169.254", False, False, False, True, False),
        ("::", True, False, False, False, False),
        ("::1", False, True, False, False, False),
        ("2001:db8::abcd", False, False, False, False, True),
        ("fd00::1", False, False, False, False, True),
        ("ff00::1", False, False, False, False, False),
        ("ff02::1", False, False, True, False, False),
        ("ff12::1", False, False, True, False, False),
        ("fe80::1", False, False, False, True, False),
        ("febf::1", False, False, False, True, False),
        ("fd80::1", False, False, False, False, True),
        ("::1.2.3.4", False, False, False, False, True),
    ],
)
def test_address_classes_follow_gos_definitions(
    text: str,
    unspecified: bool,
    loopback: bool,
    ll_multicast: bool,
    ll_unicast: bool,
    global_unicast: bool,
) -> None:
    ip = IP.parse(text)
    assert (
        ip.is_unspecified(),
        ip.is_loopback(),
        ip.is_link_local_multicast(),
        ip.is_link_local_unicast(),
        ip.is_global_unicast(),
    ) == (unspecified, loopback, ll_multicast, ll_unicast, global_unicast)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "10.0.0.1", False),
        ("2001:db8::1", "2001:DB8::1", True),
        ("::", "::ffff", False),
        ("::102:304", "::1.2.3.4", True),
        ("0.0.0.0", "::", False),
    ],
)
def test_addresses_are_equal_when_family_and_bits_match(a: str, b: str, equal: bool) -> None:
    x, y = IP.parse(a), IP.parse(b)
    assert (x == y, hash(x) == hash(y)) == (equal, equal)


# -- ranges -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "printed", "masked", "bits"),
    [
        ("192.168.0.0/24", "192.168.0.0/24", "192.168.0.0/24", 24),
        ("192.168.0.1/24", "192.168.0.1/24", "192.168.0.0/24", 24),
        ("10.1.2.3/8", "10.1.2.3/8", "10.0.0.0/8", 8),
        ("1.2.3.4/0", "1.2.3.4/0", "0.0.0.0/0", 0),
        ("1.2.3.4/32", "1.2.3.4/32", "1.2.3.4/32", 32),
        ("2001:db8::/32", "2001:db8::/32", "2001:db8::/32", 32),
        ("2001:DB8::1/33", "2001:db8::1/33", "2001:db8::/33", 33),
        ("::1/128", "::1/128", "::1/128", 128),
    ],
)
def test_a_range_keeps_its_address_and_masking_clears_the_host_bits(
    text: str, printed: str, masked: str, bits: int
) -> None:
    c = CIDR.parse(text)
    assert (str(c), str(c.masked()), c.prefix_length()) == (printed, masked, bits)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("192.168.0.0/", 'bad bits after slash: ""'),
        ("192.168.0.0", "no '/'"),
        ("192.168.0.0/33", "prefix length out of range"),
        ("::/129", "prefix length out of range"),
        ("1.2.3.4/08", 'bad bits after slash: "08"'),
        ("1.2.3.4/+8", 'bad bits after slash: "+8"'),
        ("1.2.3.4/-1", 'bad bits after slash: "-1"'),
        ("1.2.3.4/99999999999999999999", 'bad bits after slash: "99999999999999999999"'),
        ("1.2.3/8", 'ParseAddr("1.2.3"): IPv4 address too short'),
        ("fe80::1%en0/64", "IPv6 zones cannot be present in a prefix"),
    ],
)
def test_an_invalid_range_is_rejected_with_netips_reason(text: str, reason: str) -> None:
    with pytest.raises(NetError) as raised:
        CIDR.parse(text)
    assert raised.value.reason.endswith(f'netip.ParsePrefix("{text}"): {reason}')


def test_an_ipv4_mapped_range_is_refused() -> None:
    with pytest.raises(NetError, match=r"IPv4-mapped IPv6 address .* is not allowed"):
        CIDR.parse("::ffff:192.168.0.1/120")


@pytest.mark.parametrize(
    ("cidr", "ip", "contained"),
    [
        ("192.168.0.0/24", "192.168.0.1", True),
        ("192.168.0.0/24", "192.168.1.1", False),
        ("192.168.0.1/24", "192.168.0.255", True),
        ("0.0.0.0/0", "255.255.255.255", True),
        ("2001:db8::/32", "2001:db8::1", True),
        ("2001:db8::/32", "192.168.1.1", False),
        ("192.168.1.1/32", "2001:db8::1", False),
        ("::/0", "1.2.3.4", False),
    ],
)
def test_a_range_contains_the_addresses_of_its_family_under_its_prefix(
    cidr: str, ip: str, contained: bool
) -> None:
    assert CIDR.parse(cidr).contains_ip(IP.parse(ip)) is contained


@pytest.mark.parametrize(
    ("outer", "inner", "contained"),
    [
        ("192.168.0.0/24", "192.168.0.0/25", True),
        ("192.168.0.0/24", "192.168.0.1/32", True),
        ("192.168.0.0/24", "192.168.0.0/23", False),
        ("10.0.0.0/8", "10.0.0.0/8", True),
        ("10.0.0.0/8", "11.0.0.0/8", False),
        ("2001:db8::/32", "2001:db8::/33", True),
        ("0.0.0.0/0", "::/0", False),
    ],
)
def test_a_range_contains_the_ranges_inside_it(outer: str, inner: str, contained: bool) -> None:
    assert CIDR.parse(outer).contains_cidr(CIDR.parse(inner)) is contained


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("127.0.0.1/24", "127.0.0.1/24", True),
        ("192.0.0.1/32", "10.0.0.1/8", False),
        ("2001:db8::/32", "10.0.0.1/32", False),
        ("192.168.0.1/24", "192.168.0.0/24", False),
    ],
)
def test_ranges_are_equal_when_address_and_prefix_match(a: str, b: str, equal: bool) -> None:
    assert (CIDR.parse(a) == CIDR.parse(b)) is equal


# -- the CEL library ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("string(ip('192.168.0.1'))", "192.168.0.1"),
        ("string(ip('2001:db8::68'))", "2001:db8::68"),
        ("isIP('192.168.0.1')", True),
        ("isIP('192.168.0.1.0')", False),
        ("isIP('fe80::1%en0')", False),
        ("isIP('::ffff:192.168.0.1')", False),
        ("ip.isCanonical('127.0.0.1')", True),
        ("ip.isCanonical('2001:DB8::68')", False),
        ("ip.isCanonical('2001:db8:0:0:0:0:0:1')", False),
        ("ip.isCanonical('2001:db8::1')", True),
        ("type(ip('192.168.0.1')) == net.IP", True),
        ("ip('192.168.0.1').family()", 4),
        ("ip('2001:db8::68').family()", 6),
        ("ip('0.0.0.0').isUnspecified()", True),
        ("ip('127.0.0.1').isLoopback()", True),
        ("ip('255.255.255.255').isGlobalUnicast()", False),
        ("ip('224.0.0.1').isLinkLocalMulticast()", True),
        ("ip('169.254.169.254').isLinkLocalUnicast()", True),
        ("ip('2001:db8::1') == ip('2001:DB8::1')", True),
        ("ip('::') == ip('::ffff')", False),
        ("type(cidr('192.168.0.0/24')) == net.CIDR", True),
        ("string(cidr('2001:db8::/32'))", "2001:db8::/32"),
        ("isCIDR('192.168.0.0/24')", True),
        ("isCIDR('192.168.0.0/')", False),
        ("cidr('127.0.0.1/24') == cidr('127.0.0.1/24')", True),
        ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
        ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", False),
        ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))", True),
        ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')", False),
        ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", True),
        ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", True),
        ("cidr('192.168.0.0/24').prefixLength()", 24),
        ("cidr('2001:db8::/32').ip() == ip('2001:db8::')", True),
    ],
)
def test_the_cel_functions_behave_as_in_kubernetes(source: str, expected: object) -> None:
    result = evaluate(source)
    assert (result, type(result)) == (expected, type(expected))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("ip('192.168.0.1.0')", 'IP Address "192.168.0.1.0" parse error'),
        ("ip('2001:db8:::68')", 'IP Address "2001:db8:::68" parse error'),
        ("ip('fe80::1%en0')", "with zone value is not allowed"),
        ("ip('::ffff:192.168.0.1')", "IPv4-mapped IPv6 address .* is not allowed"),
        ("ip('::ffff:c0a8:1')", "IPv4-mapped IPv6 address .* is not allowed"),
        ("ip.isCanonical('127.0.0.1.0')", 'IP Address "127.0.0.1.0" parse error'),
        ("cidr('192.168.0.0/')", "network address parse error during conversion from string"),
        ("cidr('fe80::1%en0/24')", "IPv6 zones cannot be present in a prefix"),
        ("cidr('::ffff:192.168.0.1/24')", "IPv4-mapped IPv6 address .* is not allowed"),
        ("cidr('10.0.0.0/8').containsIP('10.0.0')", "parse error"),
        ("cidr('10.0.0.0/8').containsCIDR('10.0.0.0')", "network address parse error"),
        ("isIP(cidr('192.168.0.0/24'))", "no (such|matching) overload"),
        ("cidr('10.0.0.0/8').containsIP(1)", "no (such|matching) overload"),
        ("ip(1)", "no (such|matching) overload"),
    ],
)
def test_bad_input_is_an_evaluation_error(source: str, message: str) -> None:
    with pytest.raises(CELError, match=message):
        evaluate(source)
