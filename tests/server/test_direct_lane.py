"""The worker's direct lane (server/transport/plain.py): a plain filter or prioritize call is answered
without gunicorn's parser, environ and Response, byte for byte as gunicorn answers it, with
the same metrics and decision log; every other request is answered the usual way.

Which lane answered shows in the server's debug log: the direct lane logs "answered in
the direct lane", gunicorn's own request hook logs "POST <path>" for what it parses. The
reference for "as gunicorn answers it" is the same call with one extra header that
gunicorn drops (a name with an underscore) and the lane leaves to gunicorn.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from policyext.server.app import Options, create_app
from policyext.server.transport import plain
from policyext.server.transport.plain import HeadLimits, PlainHeads, plain_post
from policyext.server.transport.responses import LARGE_REPLY, response, send_response
from policyext.server.transport.worker import IN_LOOP_BODY, FramingThreadWorker
from policyext.store import PolicyStore
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.kube import fixture_bytes
from tests.server.metrics_scrape import Scrape

LANE_LINE = "answered in the direct lane"
BODIES = {
    "filter NodeNames": ("filter", fixture_bytes("filter-names.request.json")),
    "filter Nodes": ("filter", fixture_bytes("filter-nodes.request.json")),
    "prioritize NodeNames": ("prioritize", fixture_bytes("prioritize-names.request.json")),
    "prioritize Nodes": ("prioritize", fixture_bytes("prioritize-nodes.request.json")),
}


def _many_nodes(copies: int) -> bytes:
    """The filter Nodes request with each node `copies` times under new names: a body of a
    few MB, read from the socket in several pieces."""
    args = json.loads(fixture_bytes("filter-nodes.request.json"))
    nodes = args["Nodes"]["items"]
    items = []
    for i in range(copies):
        for node in nodes:
            copy = json.loads(json.dumps(node))
            copy["metadata"]["name"] = f"{node['metadata']['name']}-{i}"
            items.append(copy)
    args["Nodes"]["items"] = items
    return json.dumps(args).encode()


BODIES["filter Nodes, a few MB"] = ("filter", _many_nodes(250))
# bind takes the lane too, in a thread (it waits on the API server; these servers have
# none to bind with, and say so in the reply)
LANE_BODIES = {**BODIES, "bind": ("bind", fixture_bytes("bind.request.json"))}
GUNICORN_DROPS = "X_Ignored: 1\r\n"  # gunicorn drops it (header_map), the lane declines it


def call(
    path: str,
    body: bytes,
    extra: str = "",
    *,
    version: str = "HTTP/1.1",
    content_type: str = "application/json",
) -> bytes:
    """A call as kube-scheduler's Go client sends it."""
    head = (
        f"POST {path} {version}\r\nHost: 127.0.0.1\r\nUser-Agent: Go-http-client/1.1\r\n"
        f"Content-Length: {len(body)}\r\nContent-Type: {content_type}\r\n"
        f"Accept-Encoding: gzip\r\n{extra}\r\n"
    )
    return head.encode() + body


def chunked(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    return head.encode() + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


@dataclass(frozen=True)
class Response:
    status_line: str
    headers: list[tuple[str, str]]  # in order, as sent
    body: bytes
    raw: bytes

    @property
    def status(self) -> int:
        return int(self.status_line.split()[1])

    def without_date(self) -> bytes:
        """The bytes, with the Date header's value (a clock) blanked."""
        return re.sub(rb"\r\nDate: [^\r]*\r\n", b"\r\nDate: -\r\n", self.raw)


class Wire:
    """One connection to the server, on raw (or TLS) bytes: requests out, responses in."""

    def __init__(self, server: ExtenderServer, receive_buffer: int | None = None) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(60)
        if receive_buffer is not None:  # before connecting: it sets the window offered
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.connect((server.host, server.port))
        if server.tls is not None:
            sock = server.tls.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock
        self.received = b""

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *_: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError(f"closed after {self.received!r}")
        self.received += data

    def response(self) -> Response:
        while b"\r\n\r\n" not in self.received:
            self._more()
        end = self.received.index(b"\r\n\r\n") + 4
        lines = self.received[: end - 4].decode("latin-1").split("\r\n")
        headers = [(k, v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
        if lines[0].split()[1] == "100":  # an interim response: the final one follows
            self.received = self.received[end:]
            return self.response()
        length = int(dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
        while len(self.received) < end + length:
            self._more()
        raw, self.received = self.received[: end + length], self.received[end + length :]
        return Response(lines[0], headers, raw[end:], raw)

    def exchange(self, data: bytes) -> Response:
        self.send(data)
        return self.response()


class Lanes:
    """Counts of requests answered in the direct lane and by gunicorn, from the debug log."""

    def __init__(self, server: ExtenderServer) -> None:
        self.server = server

    def direct(self) -> int:
        return self.server.stderr_text().count(LANE_LINE)

    def gunicorn(self) -> int:
        """POSTs gunicorn parsed (its pre_request hook's debug line)."""
        return len(re.findall(r"\[DEBUG\] POST /", self.server.stderr_text()))


def answered(server: ExtenderServer, requests: Sequence[bytes]) -> tuple[list[Response], int]:
    """The responses to `requests` sent one after the other on one connection, and how many
    the direct lane answered."""
    lanes = Lanes(server)
    before = lanes.direct()
    with Wire(server) as wire:
        replies = [wire.exchange(r) for r in requests]
    return replies, lanes.direct() - before


@dataclass(frozen=True)
class Serving:
    prefix: str = ""  # --url-prefix
    tls: bool = False


SERVINGS = {
    "plain": Serving(),
    "with a URL prefix": Serving(prefix="/scheduler/extender"),
    "over TLS": Serving(tls=True),
}


@pytest.fixture(scope="module")
def servers(
    serve: ServerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], ExtenderServer]:
    """A server per way of serving (one worker, its debug log on), started when first used."""
    started: dict[str, ExtenderServer] = {}

    def server(name: str) -> ExtenderServer:
        if name not in started:
            serving = SERVINGS[name]
            flags = ["--workers", "1", "--threads", "2", "--log-level", "debug"]
            if serving.prefix:
                flags += ["--url-prefix", serving.prefix]
            tls = None
            if serving.tls:
                certs = pytest.importorskip("tests.server.certs")
                pki = certs.make_pki(tmp_path_factory.mktemp("pki"))
                flags += ["--tls-cert", str(pki.server.cert), "--tls-key", str(pki.server.key)]
                tls = ssl.create_default_context(cafile=str(pki.ca))
            started[name] = serve(*flags, tls=tls)
        return started[name]

    return server


@pytest.mark.parametrize("serving", list(SERVINGS))
@pytest.mark.parametrize("call_name", list(LANE_BODIES))
def test_a_plain_call_is_answered_in_the_direct_lane_byte_for_byte_as_gunicorn_answers_it(
    servers: Callable[[str], ExtenderServer], serving: str, call_name: str
) -> None:
    server = servers(serving)
    verb, body = LANE_BODIES[call_name]
    path = f"{SERVINGS[serving].prefix}/{verb}"
    gunicorn_before = Lanes(server).gunicorn()
    (direct, reference), in_lane = answered(
        server, [call(path, body), call(path, body, GUNICORN_DROPS)]
    )
    assert in_lane == 1, "the plain call took the direct lane, the other did not"
    assert Lanes(server).gunicorn() - gunicorn_before == 1, "gunicorn parsed only the other"
    assert direct.status == 200
    assert [name for name, _ in direct.headers] == [
        "Server",
        "Date",
        "Connection",
        "Content-Type",
        "Content-Length",
    ]
    assert direct.without_date() == reference.without_date()
    assert json.loads(direct.body)  # a protocol reply, not an error


FILTER = BODIES["filter NodeNames"][1]
NOT_PLAIN = {
    "Connection: close": (call("/filter", FILTER, "Connection: close\r\n"), 200),
    "HTTP/1.0": (call("/filter", FILTER, version="HTTP/1.0"), 200),
    "a query string": (call("/filter?x=1", FILTER), 200),
    "a Content-Type with a charset": (
        call("/filter", FILTER, content_type="application/json; charset=utf-8"),
        200,
    ),
    "a chunked body": (chunked("/filter", FILTER), 200),
    "Expect: 100-continue": (call("/filter", FILTER, "Expect: 100-continue\r\n"), 200),
    "a body that is not JSON": (call("/filter", b"{not json"), 400),
    "a body that is not the protocol's": (call("/filter", b'{"Pod": 3}'), 400),
    "an unknown path": (call("/filterx", FILTER), 404),
    "another verb": (call("/preempt", fixture_bytes("preempt-victims.request.json")), 200),
    "a bind that is not the protocol's": (call("/bind", b'{"PodName": 3}'), 400),
}


@pytest.mark.parametrize("request_bytes, status", NOT_PLAIN.values(), ids=list(NOT_PLAIN))
def test_a_request_that_is_not_a_plain_call_is_answered_the_usual_way(
    servers: Callable[[str], ExtenderServer], request_bytes: bytes, status: int
) -> None:
    server = servers("plain")
    (plain,), _ = answered(server, [call("/filter", FILTER)])
    (reply,), in_lane = answered(server, [request_bytes])
    assert in_lane == 0
    assert reply.status == status
    content_type = dict(reply.headers)["Content-Type"]
    assert content_type == "application/json", "a JSON answer or a JSON error"
    if request_bytes.startswith(b"POST /filter") and status == 200:
        assert reply.body == plain.body, "the same reply by the usual way"
    if b"close" in request_bytes or b"HTTP/1.0" in request_bytes:
        assert ("Connection", "close") in reply.headers


@pytest.mark.parametrize("serving", ["plain", "over TLS"])
def test_pipelined_requests_are_answered_in_order_whichever_lane_answers_each(
    servers: Callable[[str], ExtenderServer], serving: str
) -> None:
    server = servers(serving)
    prioritize = BODIES["prioritize NodeNames"][1]
    (filter_alone, prioritize_alone), _ = answered(
        server, [call("/filter", FILTER), call("/prioritize", prioritize)]
    )
    lanes = Lanes(server)
    before = lanes.direct()
    burst = [
        call("/filter", FILTER),
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        call("/prioritize", prioritize),
        call("/filter", b"{not json"),
        call("/filter", FILTER),
    ]
    with Wire(server) as wire:
        wire.send(b"".join(burst))
        replies = [wire.response() for _ in burst]
        assert wire.exchange(call("/filter", FILTER)).status == 200, "the connection goes on"
    assert [r.status for r in replies] == [200, 200, 200, 400, 200]
    assert lanes.direct() - before == 4
    assert replies[0].body == replies[4].body == filter_alone.body
    assert replies[2].body == prioritize_alone.body


@pytest.mark.parametrize("pause", [0.0, 0.05], ids=["back to back", "with pauses"])
def test_calls_on_a_kept_alive_connection_take_the_direct_lane_one_after_another(
    servers: Callable[[str], ExtenderServer], pause: float
) -> None:
    """Each call is answered the moment it is whole, back to back or after a pause."""
    server = servers("plain")
    lanes = Lanes(server)
    before = lanes.direct()
    with Wire(server) as wire:
        for i in range(20):
            if pause:
                time.sleep(pause)
            verb, body = BODIES["filter NodeNames" if i % 2 else "prioritize NodeNames"]
            assert wire.exchange(call(f"/{verb}", body)).status == 200
    assert lanes.direct() - before == 20


def test_a_client_slow_to_read_its_reply_keeps_no_other_call_waiting(
    servers: Callable[[str], ExtenderServer],
) -> None:
    """The event loop answers a call of this size itself; a reply the client does not take
    whole is sent on by a thread while the loop serves the other connections."""
    server = servers("plain")
    body = _many_nodes(80)
    assert len(body) < IN_LOOP_BODY
    with Wire(server) as fast:
        reference = fast.exchange(call("/filter", body))
    assert reference.status == 200 and len(reference.body) > 256 * 1024
    with Wire(server, receive_buffer=4096) as slow:
        slow.send(call("/filter", body))  # and nothing read yet
        with Wire(server) as other:
            for verb, other_body in (BODIES["filter NodeNames"], BODIES["prioritize NodeNames"]):
                assert other.exchange(call(f"/{verb}", other_body)).status == 200
            assert other.exchange(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").status == 200
        assert slow.response().without_date() == reference.without_date()
        assert slow.exchange(call("/filter", FILTER)).status == 200, "the connection goes on"


def _counters(scrape: Scrape) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples that count events (not durations)."""
    return {
        key: value
        for key, value in scrape.samples.items()
        if key[0].startswith("policyext_")
        and not key[0].startswith("policyext_request_duration_seconds")
        and not key[0].endswith("_created")
    }


def test_the_metrics_and_the_decision_log_are_the_same_whichever_lane_answers(
    servers: Callable[[str], ExtenderServer],
) -> None:
    server = servers("plain")
    calls = [call(f"/{verb}", body) for verb, body in LANE_BODIES.values()]
    calls.append(call("/filter", b"{not json"))  # a 400, counted by Flask either way

    def summaries(lines: list[str]) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in lines]
        # the summary lines, not the debug lines per node
        return [
            {k: v for k, v in r.items() if k not in ("ms", "time")}
            for r in records
            if "node" not in r
        ]

    def counted(requests: list[bytes]) -> tuple[dict[object, float], list[Any], int]:
        before = _counters(Scrape(server.get("/metrics").body.decode()))
        logged = len(server.stdout_lines())
        _, in_lane = answered(server, requests)
        # a call a thread answered is counted, then logged, after its reply: its line awaited
        lines = server.stdout_lines(lambda lines: len(summaries(lines[logged:])) >= len(BODIES))
        after = _counters(Scrape(server.get("/metrics").body.decode()))
        decisions = summaries(lines[logged:])
        delta = {k: after[k] - before.get(k, 0.0) for k in after}
        return {k: v for k, v in delta.items() if v}, decisions, in_lane

    answered(server, calls)  # both batches then find the same replies remembered
    direct_counts, direct_log, direct_calls = counted(calls)
    usual = [r.replace(b"\r\n\r\n", f"\r\n{GUNICORN_DROPS}\r\n".encode(), 1) for r in calls]
    usual_counts, usual_log, usual_direct_calls = counted(usual)
    assert (direct_calls, usual_direct_calls) == (len(LANE_BODIES), 0)
    assert direct_counts == usual_counts
    assert direct_log == usual_log
    assert len(direct_log) == len(BODIES)  # (bind writes no decision)


PLAIN = call("/filter", b"{}")
LIMITS = HeadLimits.of(8190, 100, 8190, ["X-FORWARDED-PROTO"])


def _with(header: str) -> bytes:
    return PLAIN.replace(b"Accept-Encoding: gzip\r\n", header.encode() + b"\r\n")


PLAIN_OR_NOT: dict[str, tuple[bytes, str | None]] = {
    "as the Go client sends it": (PLAIN, "/filter"),
    "with a pipelined request after it": (PLAIN + PLAIN, "/filter"),
    "Connection: keep-alive": (_with("Connection: Keep-Alive"), "/filter"),
    "to another path": (PLAIN.replace(b"/filter", b"/a/b/prioritize", 1), "/a/b/prioritize"),
    "GET": (PLAIN.replace(b"POST", b"GET", 1), None),
    "HTTP/1.0": (PLAIN.replace(b"HTTP/1.1", b"HTTP/1.0", 1), None),
    "a query": (PLAIN.replace(b"/filter", b"/filter?a", 1), None),
    "a percent-escape": (PLAIN.replace(b"/filter", b"/filt%65r", 1), None),
    "an absolute URI": (PLAIN.replace(b"/filter", b"http://x/filter", 1), None),
    "two spaces in the request line": (PLAIN.replace(b"POST ", b"POST  ", 1), None),
    "Connection: close": (_with("Connection: close"), None),
    "Connection: upgrade": (_with("Connection: keep-alive, Upgrade"), None),
    "Transfer-Encoding": (_with("Transfer-Encoding: identity"), None),
    "Expect": (_with("Expect: 100-continue"), None),
    "Upgrade": (_with("Upgrade: h2c"), None),
    "a scheme header": (_with("X-Forwarded-Proto: https"), None),
    "a header name with an underscore": (_with("X_Forwarded_For: 1.2.3.4"), None),
    "a header name with a space": (_with("Accept-Encoding : gzip"), None),
    "a folded header": (_with("X-A: b\r\n c"), None),
    "a control byte in a value": (_with("X-A: b\x01"), None),
    "a byte over 0x7e in a value": (_with("X-A: \xe9").replace(b"\xc3\xa9", b"\xe9"), None),
    "two Content-Types": (_with("Content-Type: application/json"), None),
    "two Content-Lengths": (_with("Content-Length: 2"), None),
    "two Hosts": (_with("Host: y"), None),
    "a Content-Length that is not a number": (
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: +2", 1),
        None,
    ),
    "no Content-Type": (PLAIN.replace(b"Content-Type: application/json\r\n", b"", 1), None),
    "a body not complete": (PLAIN[:-1], None),
    "a request line over the limit": (PLAIN.replace(b"/filter", b"/" + b"f" * 8190, 1), None),
    "a header over the limit": (_with("X-A: " + "a" * 8190), None),
    "as many headers as the limit": (_with("\r\n".join(f"X-{i}: 1" for i in range(96))), None),
    "a Content-Length of 19 digits": (
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: " + b"0" * 18 + b"2", 1),
        None,
    ),
    "a Content-Length of thousands of digits": (
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: " + b"0" * 8000 + b"2", 1),
        None,
    ),
    "a space after the Content-Length": (
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2 ", 1),
        "/filter",
    ),
    "a Content-Length of another spelling": (
        PLAIN.replace(b"Content-Length: 2", b"content-length:2", 1),
        "/filter",
    ),
}


def _heads(seen: str, limits: HeadLimits = LIMITS) -> PlainHeads:
    """What finds plain calls in the event loop: new, or after plain calls to both paths
    of the table whose Content-Length was another (the heads it then remembers are those
    of most of the table's requests, but for that value)."""
    heads = PlainHeads(limits)
    if seen == "after other plain calls":
        for path in ("/filter", "/a/b/prioritize"):
            assert heads.find(call(path, b"[1, 2]")) is not None
    return heads


@pytest.mark.parametrize("seen", ["alone", "new", "after other plain calls"])
@pytest.mark.parametrize("data, path", PLAIN_OR_NOT.values(), ids=list(PLAIN_OR_NOT))
def test_only_a_plain_post_of_json_is_taken_for_the_direct_lane(
    data: bytes, path: str | None, seen: str
) -> None:
    found = plain_post(data, LIMITS) if seen == "alone" else _heads(seen).find(data)
    if path is None:
        assert found is None
        return
    assert found is not None
    assert found.path == path
    assert data[found.body_start : found.end] == b"{}"
    assert data[found.end :] in (b"", PLAIN), "what follows is the next request"


# a header line at most 34 bytes long: the Go client's Content-Length line is 16 bytes and
# its number, so that a number of 16 digits is within the limit, and of 17 not
SHORT_LINES = HeadLimits.of(8190, 100, 34, [])


@pytest.mark.parametrize("seen", ["alone", "new", "after other plain calls"])
@pytest.mark.parametrize(("digits", "plain"), [(1, True), (16, True), (17, False), (18, False)])
def test_a_content_length_line_over_the_header_limit_makes_a_call_not_plain(
    seen: str, digits: int, plain: bool
) -> None:
    data = PLAIN.replace(b"Content-Length: 2", b"Content-Length: " + b"2".zfill(digits), 1)
    found = (
        plain_post(data, SHORT_LINES) if seen == "alone" else _heads(seen, SHORT_LINES).find(data)
    )
    assert (found is not None) == plain


def test_a_head_seen_before_but_for_its_content_length_is_not_read_line_by_line_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heads = _heads("after other plain calls")
    monkeypatch.setattr(plain, "plain_post", _not_called)

    for body in (b"{}", b"[" * 5000):
        found = heads.find(call("/filter", body))
        assert found is not None
        assert (found.path, found.end - found.body_start) == ("/filter", len(body))


def _not_called(data: bytes, limits: HeadLimits) -> None:
    raise AssertionError("read line by line")


class _App:
    """An application offering the lane, as create_app's does."""

    def __init__(self, offered: bool = True) -> None:
        self.extensions = {"policyext.direct": lambda path, body: None} if offered else {}


def _before(worker: object, req: object) -> None:
    pass


def _after(worker: object, req: object, environ: object, resp: object) -> None:
    pass


LANE_CONFIGURATIONS: dict[str, tuple[dict[str, Any], bool, bool]] = {
    # settings, the app offers the lane, the lane is taken
    "serve's configuration": ({}, True, True),
    "an application without a lane": ({}, False, False),
    "an access log": ({"accesslog": "-"}, True, False),
    "a pre_request hook": ({"pre_request": _before}, True, False),
    "a post_request hook": ({"post_request": _after}, True, False),
    "the PROXY protocol": ({"proxy_protocol": "v1"}, True, False),
    "HTTP/2": ({"http_protocols": "h2,h1"}, True, False),
    "no keep-alive": ({"keepalive": 0}, True, False),
}


@pytest.mark.parametrize(
    "settings, offered, taken", LANE_CONFIGURATIONS.values(), ids=list(LANE_CONFIGURATIONS)
)
def test_the_lane_is_taken_only_where_gunicorn_would_call_nothing_but_the_application(
    settings: dict[str, Any], offered: bool, taken: bool
) -> None:
    cfg = Config()
    for key, value in {"keepalive": 75, **settings}.items():
        cfg.set(key, value)
    worker = FramingThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))
    try:
        worker.wsgi = _App(offered)
        assert (worker._direct_lane() is not None) is taken
    finally:
        worker.tmp.close()


def test_the_application_has_bind_answered_by_a_thread_of_the_lane_never_by_the_loop() -> None:
    cfg = Config()
    worker = FramingThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))
    try:
        worker.wsgi = create_app(PolicyStore(), options=Options(url_prefix="/x"))
        assert worker._direct_lane() is not None
        assert worker._lane_paths_for_threads() == {"/x/bind"}
    finally:
        worker.tmp.close()


@dataclass
class _Conn:
    sock: socket.socket
    carry: bytes = b""


WORKER_STATES: dict[str, tuple[dict[str, Any], bool]] = {
    # the worker's state, the lane answers
    "serving": ({}, True),
    "stopping": ({"alive": False}, False),
    "at its last request before a restart (max_requests)": ({"nr": 9}, False),
    "one request before its last": ({"nr": 8}, True),
}


@pytest.mark.parametrize("state, answers", WORKER_STATES.values(), ids=list(WORKER_STATES))
def test_the_lane_leaves_to_gunicorn_a_call_after_which_it_would_close_the_connection(
    state: dict[str, Any], answers: bool
) -> None:
    cfg = Config()
    cfg.set("max_requests", 10)
    worker = FramingThreadWorker(0, 0, [], None, 30, cfg, Logger(cfg))
    ours, theirs = socket.socketpair()
    try:
        worker.wsgi = _App()
        accounted: list[str] = []
        worker._lane = lambda path, body: (
            "200 OK",
            b'{"path": "%s"}' % path.encode(),
            lambda: accounted.append(path),
        )
        for key, value in state.items():
            setattr(worker, key, value)
        nr = worker.nr
        pipelined = b"GET /healthz HTTP/1.1\r\n\r\n"
        conn = _Conn(ours)
        answered = worker._answer_directly(conn, PLAIN + pipelined)
        if not answers:
            assert answered is None
            assert worker.nr == nr
            return
        assert answered is True
        assert worker.nr == nr + 1, "counted towards max_requests"
        reply = theirs.recv(65536)
        assert reply.startswith(b"HTTP/1.1 200 OK\r\nServer: gunicorn\r\nDate: ")
        assert reply.endswith(b'Content-Length: 19\r\n\r\n{"path": "/filter"}')
        assert conn.carry == pipelined, "the next request stays for the next turn"
        assert accounted == ["/filter"], "counted and logged, once"
    finally:
        ours.close()
        theirs.close()
        worker.tmp.close()


@pytest.mark.parametrize("size", [0, 1000, LARGE_REPLY, 3 * 1024 * 1024 + 7])
def test_a_reply_is_sent_whole_however_large_and_however_slowly_it_is_read(size: int) -> None:
    """A large reply goes out apart from its head, in as many writes as the socket takes."""
    body = bytes(i % 251 for i in range(size))
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # partial writes
    received: list[bytes] = []

    def read_all() -> None:
        while chunk := theirs.recv(1000):
            received.append(chunk)
            time.sleep(0)

    reader = threading.Thread(target=read_all)
    reader.start()
    send_response(ours, "200 OK", body)
    ours.close()
    reader.join(60)
    theirs.close()
    undated = re.compile(rb"\r\nDate: [^\r]*")  # (a second may pass meanwhile)
    sent = undated.sub(b"", b"".join(received))
    assert sent == undated.sub(b"", response("200 OK", body))
