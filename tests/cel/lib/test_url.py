"""URLs: the Kubernetes CEL `url` library.

Expected values were checked against Kubernetes' library (Go's net/url underneath).
"""

from __future__ import annotations

import pytest

from policyext.cel import CELError, compile
from policyext.cel.lib.url import URL, URL_LIBRARY, URLError
from policyext.cel.stdlib import STANDARD_LIBRARY

LIBRARIES = (STANDARD_LIBRARY, URL_LIBRARY)


def evaluate(source: str) -> object:
    return compile(source, libraries=LIBRARIES).evaluate({})


@pytest.mark.parametrize(
    ("text", "scheme", "host", "hostname", "port", "path"),
    [
        ("https://example.com/", "https", "example.com", "example.com", "", "/"),
        ("https://example.com:80/", "https", "example.com:80", "example.com", "80", "/"),
        ("https://127.0.0.1:80/", "https", "127.0.0.1:80", "127.0.0.1", "80", "/"),
        ("https://[::1]:80/", "https", "[::1]:80", "::1", "80", "/"),
        ("https://[::1]/", "https", "[::1]", "::1", "", "/"),
        ("https://[fe80::1%25en0]/", "https", "[fe80::1%en0]", "fe80::1%en0", "", "/"),
        ("https://example.com", "https", "example.com", "example.com", "", ""),
        ("HTTPS://Example.COM/A", "https", "Example.COM", "Example.COM", "", "/A"),
        ("https://example.com/path", "https", "example.com", "example.com", "", "/path"),
        (
            "https://example.com/path with spaces/",
            "https",
            "example.com",
            "example.com",
            "",
            "/path%20with%20spaces/",
        ),
        ("https://example.com/a%2Fb", "https", "example.com", "example.com", "", "/a%2Fb"),
        ("https://example.com/%41", "https", "example.com", "example.com", "", "/%41"),
        ("https://example.com/é", "https", "example.com", "example.com", "", "/%C3%A9"),
        (
            "https://user:pass@example.com:80/p",
            "https",
            "example.com:80",
            "example.com",
            "80",
            "/p",
        ),
        ("https://example.com:/", "https", "example.com:", "example.com", "", "/"),
        ("foo://a:b:1/", "foo", "a:b:1", "a:b", "1", "/"),
        ("/path", "", "", "", "", "/path"),
        ("/absolute-path", "", "", "", "", "/absolute-path"),
        ("//example.com/x", "", "example.com", "example.com", "", "/x"),
        ("*", "", "", "", "", "*"),
        ("mailto:someone@example.com", "mailto", "", "", "", ""),
    ],
)
def test_the_parts_of_a_url_are_read_as_go_reads_them(
    text: str, scheme: str, host: str, hostname: str, port: str, path: str
) -> None:
    u = URL.parse(text)
    assert (u.scheme(), u.host(), u.hostname(), u.port(), u.escaped_path()) == (
        scheme,
        host,
        hostname,
        port,
        path,
    )


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("https://example.com/path?k1=a&k2=b&k2=c", {"k1": ["a"], "k2": ["b", "c"]}),
        (
            "https://example.com/path?key with spaces=value with spaces",
            {"key with spaces": ["value with spaces"]},
        ),
        ("https://example.com/path?", {}),
        ("https://example.com/path", {}),
        ("/p?a+b=c+d&e=%41%2B", {"a b": ["c d"], "e": ["A+"]}),
        ("/p?flag&=x&&x=y=z", {"flag": [""], "": ["x"], "x": ["y=z"]}),
        ("/p?a=1;b=2&c=3", {"c": ["3"]}),
        ("/p?a=%zz&b=1", {"b": ["1"]}),
        ("/p?a=1#b=2", {"a": ["1"]}),
        ("/p?é=ü", {"é": ["ü"]}),
    ],
)
def test_the_query_is_a_map_of_unescaped_values(text: str, query: dict[str, list[str]]) -> None:
    assert URL.parse(text).query() == query


def test_a_query_with_too_many_pairs_reads_as_empty() -> None:
    assert URL.parse("/p?" + "&".join(["a=1"] * 10_001)).query() == {}
    assert len(URL.parse("/p?" + "&".join(["a=1"] * 10_000)).query()["a"]) == 10_000


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("https://example.com/path with spaces/", "https://example.com/path%20with%20spaces/"),
        ("HTTP://example.com", "http://example.com"),
        ("https://u%40x:p@h/", "https://u%40x:p@h/"),
        ("/a#frag ment", "/a#frag%20ment"),
        ("/a?x=1#f", "/a?x=1#f"),
        ("/a?", "/a?"),
        ("mailto:x@y", "mailto:x@y"),
        ("https://[fe80::1%25en0]:8080/", "https://[fe80::1%25en0]:8080/"),
        ("http:///x", "http:///x"),
    ],
)
def test_a_url_prints_as_gos_url_string(text: str, printed: str) -> None:
    assert str(URL.parse(text)) == printed


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty url"),
        ("../relative-path", "invalid URI for request"),
        ("relative", "invalid URI for request"),
        ("https://a:b:c/", 'invalid port ":b:c" after host'),
        ("http://a:1:2/", 'invalid port ":1:2" after host'),
        ("https://example.com:x/", 'invalid port ":x" after host'),
        ("://x", "missing protocol scheme"),
        ("https://ex ample.com/", 'invalid character " " in host name'),
        ("https://[::1/", "missing ']' in host"),
        ("https://a[::1]/", "invalid IP-literal"),
        ("https://[1.2.3.4]/", "invalid IP-literal"),
        ("https://[x]/", 'invalid host: ParseAddr("x"): unable to parse IP'),
        ("https://h%41/", 'invalid URL escape "%41"'),
        ("/a%zz", 'invalid URL escape "%zz"'),
        ("/a%", 'invalid URL escape "%"'),
        ("/a\tb", "net/url: invalid control character in URL"),
        ("https://us er@h/", "net/url: invalid userinfo"),
        ("https://ü@h/", "net/url: invalid userinfo"),
    ],
)
def test_an_invalid_url_is_rejected_with_gos_reason(text: str, reason: str) -> None:
    with pytest.raises(URLError) as raised:
        URL.parse(text)
    prefix = "URL parse error during conversion from string: parse "
    assert raised.value.reason.startswith(prefix)
    assert raised.value.reason.endswith(": " + reason)
    assert URL.is_valid(text) is False


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # ParseRequestURI does not look at the query, url.Parse checks the fragment
        ("/p?q#%zz", 'parse "/p?q#%zz": invalid URL escape "%zz"'),
        # without a scheme, ParseRequestURI reads `//host` as a path, url.Parse as a host
        ("//h:x/p", 'parse "//h:x/p": invalid port ":x" after host'),
    ],
)
def test_is_url_can_accept_what_url_refuses_as_in_kubernetes(text: str, reason: str) -> None:
    assert URL.is_valid(text) is True
    with pytest.raises(URLError) as raised:
        URL.parse(text)
    assert raised.value.reason.endswith(reason)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("https://example.com/a", "HTTPS://example.com/a", True),
        # Go keeps an escaping it does not need when it is valid, and prints it
        ("https://example.com/%41", "https://example.com/A", False),
        ("https://example.com/a", "https://example.com/a/", False),
        ("/a?x=1", "/a?x=1#", True),
    ],
)
def test_urls_are_equal_when_go_prints_them_alike(a: str, b: str, equal: bool) -> None:
    x, y = URL.parse(a), URL.parse(b)
    assert (x == y, hash(x) == hash(y)) == (equal, equal)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", True),
        ("isURL('/absolute-path')", True),
        ("isURL('https://a:b:c/')", False),
        ("isURL('../relative-path')", False),
        ("url('/path').getScheme()", ""),
        ("url('https://example.com/').getScheme()", "https"),
        ("url('https://example.com:80/').getHost()", "example.com:80"),
        ("url('https://[::1]:80/').getHost()", "[::1]:80"),
        ("url('/path').getHost()", ""),
        ("url('https://[::1]:80/').getHostname()", "::1"),
        ("url('https://example.com:80/').getPort()", "80"),
        ("url('https://example.com/').getPort()", ""),
        ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
        ("url('https://example.com').getEscapedPath()", ""),
        (
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()",
            {"k1": ["a"], "k2": ["b", "c"]},
        ),
        ("url('https://example.com/path?').getQuery()", {}),
        ("url('https://example.com/path?k=v').getQuery()['k'][0]", "v"),
        ("url('https://example.com/a') == url('HTTPS://example.com/a')", True),
    ],
)
def test_the_cel_functions_behave_as_in_kubernetes(source: str, expected: object) -> None:
    result = evaluate(source)
    assert (result, type(result)) == (expected, type(expected))


def test_the_type_of_a_url_is_kubernetes_url() -> None:
    assert str(evaluate("type(url('/a'))")) == "kubernetes.URL"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("url('https://a:b:c/')", 'invalid port ":b:c" after host'),
        ("url('../relative-path')", "invalid URI for request"),
        ("url(1)", "no (such|matching) overload"),
        ("isURL(b'/a')", "no (such|matching) overload"),
    ],
)
def test_bad_input_is_an_evaluation_error(source: str, message: str) -> None:
    with pytest.raises(CELError, match=message):
        evaluate(source)
