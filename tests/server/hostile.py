"""Hostile requests: the table the reliability tests send to a real server, and the
command that prints it as the table of docs/reliability.md.

Each request is answered with its 4xx and a JSON error saying what is wrong, or, where the
protocol has an answer, with that answer (unknown node names are FailedNodes, not an
error). `python -m tests.server.hostile` runs the table against a fresh server and prints
it in Markdown: input, status, and the start of the reply.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.server.harness import ExtenderServer, Reply, start_server
from tests.server.kube import fixture, fixture_bytes

MAX_BODY = 4 * 1024 * 1024  # the servers of these tests: large enough for 100,000 names
JSON = "application/json"
NAMES_REQUEST = fixture_bytes("filter-names.request.json").rstrip()
POD: dict[str, Any] = fixture("filter-names.request.json")["Pod"]
KNOWN = ["general-a", "general-b", "general-c", "spot-c", "gpu-a", "payments-b"]
# over this size the fast decoder (msgspec) reads the request first: the hostile bodies are
# sent both below and above it
FAST_PATH = 256 * 1024


@dataclass(frozen=True)
class Hostile:
    name: str
    body: bytes | None
    status: int
    says: str = ""  # a part of the error message (for a 4xx)
    check: Callable[[Any], bool] | None = None  # what a 200 reply must satisfy
    path: str = "/filter"
    method: str = "POST"
    headers: Mapping[str, str] = field(default_factory=lambda: {"Content-Type": JSON})


def dumps(document: object) -> bytes:
    return json.dumps(document).encode()


def names(*node_names: str, pod: object = POD) -> bytes:
    return dumps({"Pod": pod, "Nodes": None, "NodeNames": list(node_names)})


def _large(body_start: bytes) -> bytes:
    """`body_start` (an object's opening and some members) completed past the fast path's
    threshold with a padding member."""
    return body_start + b', "Padding": "' + b"p" * FAST_PATH + b'"}'


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}


def _failed(reply: Any) -> dict[str, str]:
    return {**reply["FailedNodes"], **reply["FailedAndUnresolvableNodes"]}


EXPLICIT: list[Hostile] = [
    # not JSON, or not JSON any decoder should take
    Hostile("malformed JSON", b'{"Pod" {}}', 400, "not valid JSON"),
    Hostile("truncated JSON", NAMES_REQUEST[: len(NAMES_REQUEST) // 2], 400, "not valid JSON"),
    Hostile("truncated after the last byte but one", NAMES_REQUEST[:-1], 400, "not valid JSON"),
    Hostile("an empty body", b"", 400, "not valid JSON"),
    Hostile("NaN", b'{"Pod": {"x": NaN}, "NodeNames": []}', 400, "not valid JSON"),
    Hostile("Infinity", b'{"Pod": {}, "NodeNames": [Infinity]}', 400, "not valid JSON"),
    Hostile("a number too large for a double", b'{"Pod": {"x": 1e400}}', 400, "not valid JSON"),
    Hostile("invalid UTF-8", b'{"Pod": {}, "NodeNames": ["\xff\xfe"]}', 400, "not valid JSON"),
    Hostile("a lone surrogate", b'{"Pod": {}, "NodeNames": ["\\udc00"]}', 400, "not valid JSON"),
    Hostile("100,000 nested [", b"[" * 100_000, 400, "not valid JSON"),
    Hostile(
        "100,000 nested [ in a body past the fast path",
        _large(b'{"Pod": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        400,
        "not valid JSON",
    ),
    Hostile(
        "invalid UTF-8 in a body past the fast path",
        _large(b'{"Pod": {"x": "\xff"}, "NodeNames": []'),
        400,
        "not valid JSON",
    ),
    Hostile(
        "NaN in a body past the fast path",
        _large(b'{"Pod": {"x": NaN}, "NodeNames": []'),
        400,
        "not valid JSON",
    ),
    # duplicate keys: the last one wins, as in Go's encoding/json (which also folds case)
    Hostile(
        "a duplicate key (the last wins, as in Go)",
        b'{"Pod": {}, "NodeNames": ["spot-c"], "NodeNames": ["general-a"]}',
        200,
        check=lambda r: r["NodeNames"] == ["general-a"],
    ),
    Hostile(
        "duplicate keys differing in case",
        b'{"Pod": {}, "NodeNames": ["spot-c"], "nodenames": ["general-a"]}',
        200,
        check=lambda r: r["NodeNames"] == ["general-a"],
    ),
    # node names
    Hostile(
        "100,000 unknown node names",
        names(*(f"node-{i}" for i in range(100_000))),
        200,
        check=lambda r: r["NodeNames"] == [] and len(_failed(r)) == 100_000,
    ),
    Hostile(
        "100,000 node names to prioritize",
        names(*(f"node-{i}" for i in range(100_000))),
        200,
        check=lambda r: len(r) == 100_000 and {e["Score"] for e in r} == {0},
        path="/prioritize",
    ),
    Hostile(
        "100,000 copies of one node name",
        names(*(["general-a"] * 100_000)),
        400,
        "'general-a' appears more than once",
    ),
    Hostile(
        "unknown node names among known ones",
        names("general-a", "nowhere-1", "general-b"),
        200,
        check=lambda r: (
            r["NodeNames"] == ["general-a", "general-b"]
            and r["FailedNodes"] == {"nowhere-1": "node is not in policyext's node cache"}
        ),
    ),
    Hostile(
        "a 100,000-character node name",
        names("n" * 100_000),
        200,
        check=lambda r: list(_failed(r)) == ["n" * 100_000],
    ),
    Hostile(
        "10,000 tiny nodes in a NodeList",
        dumps({"Pod": POD, "Nodes": {"items": [_node(f"n-{i}") for i in range(10_000)]}}),
        200,
        check=lambda r: len(r["Nodes"]["items"]) + len(_failed(r)) == 10_000,
    ),
    # empty lists
    Hostile(
        "empty NodeNames",
        names(),
        200,
        check=lambda r: r["NodeNames"] == [] and _failed(r) == {},
    ),
    Hostile(
        "an empty NodeList",
        dumps({"Pod": POD, "Nodes": {"items": []}}),
        200,
        check=lambda r: r["Nodes"]["items"] == [] and r["NodeNames"] is None,
    ),
    Hostile(
        "prioritize with empty NodeNames", names(), 200, check=lambda r: r == [], path="/prioritize"
    ),
    Hostile(
        "preempt with no candidates",
        dumps({"Pod": POD, "NodeNameToVictims": {}}),
        200,
        check=lambda r: r == {"NodeNameToMetaVictims": {}},
        path="/preempt",
    ),
    Hostile(
        "preempt on an unknown node",
        dumps({"Pod": POD, "NodeNameToMetaVictims": {"nowhere": {"Pods": [{"UID": "u"}]}}}),
        200,
        check=lambda r: r == {"NodeNameToMetaVictims": {}},
        path="/preempt",
    ),
    Hostile(
        "explain of unknown nodes",
        names("nowhere-1"),
        200,
        check=lambda r: r["unknownNodes"] == {"nowhere-1": "node is not in policyext's node cache"},
        path="/explain",
    ),
    # HTTP
    Hostile(
        "a body over the limit",
        names(*(f"node-{i}" for i in range(400_000))),
        413,
        f"limit of {MAX_BODY} bytes",
    ),
    Hostile(
        "Content-Type text/plain",
        NAMES_REQUEST,
        415,
        "got text/plain",
        headers={"Content-Type": "text/plain"},
    ),
    Hostile(
        "Content-Type multipart/form-data",
        NAMES_REQUEST,
        415,
        "got multipart/form-data",
        headers={"Content-Type": "multipart/form-data; boundary=x"},
    ),
    Hostile("GET on filter", None, 405, "method GET is not allowed", method="GET"),
    Hostile(
        "PUT on prioritize", NAMES_REQUEST, 405, "method PUT", path="/prioritize", method="PUT"
    ),
    Hostile("DELETE on bind", None, 405, "method DELETE", path="/bind", method="DELETE"),
    Hostile("PATCH on preempt", b"{}", 405, "method PATCH", path="/preempt", method="PATCH"),
    Hostile("TRACE on filter", None, 405, "method TRACE", method="TRACE"),
    Hostile("POST on /metrics", b"{}", 405, "method POST", path="/metrics"),
    Hostile(
        "a 20,000-byte header",
        NAMES_REQUEST,
        431,
        "request header fields too large",
        headers={"Content-Type": JSON, "X-Padding": "a" * 20_000},
    ),
    Hostile(
        "200 headers",
        NAMES_REQUEST,
        431,
        "request header fields too large",
        headers={"Content-Type": JSON, **{f"X-Padding-{i}": "a" for i in range(200)}},
    ),
    Hostile(
        "a 10,000-byte URL", NAMES_REQUEST, 414, "uri too long", path="/filter?" + "a" * 10_000
    ),
]


# -- a wrong type in every field of the three request messages --------------------------------
def _with(document: dict[str, Any], path: tuple[str | int, ...], value: object) -> bytes:
    changed = copy.deepcopy(document)
    target: Any = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return dumps(changed)


NAMES_ARGS = {"Pod": POD, "Nodes": None, "NodeNames": ["general-a"]}
NODES_ARGS = {
    "Pod": POD,
    "Nodes": {"metadata": {}, "items": [_node("general-a")]},
    "NodeNames": None,
}
BINDING = {"PodName": "p", "PodNamespace": "shop", "PodUID": "u", "Node": "general-a"}
VICTIMS = {
    "Pod": POD,
    "NodeNameToVictims": {
        "general-a": {"Pods": [{"metadata": {"uid": "u"}}], "NumPDBViolations": 0}
    },
}
META_VICTIMS = {
    "Pod": POD,
    "NodeNameToMetaVictims": {"general-a": {"Pods": [{"UID": "u"}], "NumPDBViolations": 0}},
}
ANY_BUT_OBJECT = [1, "x", [], True, None]
ANY_BUT_LIST = [1, "x", {}, True]
ANY_BUT_STRING = [1, [], {}, True, None]

# (verb, valid document, path of the field, its name in the error, wrong values)
FIELDS: list[tuple[str, dict[str, Any], tuple[str | int, ...], str, list[object]]] = [
    ("/filter", NAMES_ARGS, ("Pod",), "Pod", ANY_BUT_OBJECT),
    ("/filter", NAMES_ARGS, ("NodeNames",), "NodeNames", ANY_BUT_LIST),
    ("/filter", NAMES_ARGS, ("NodeNames", 0), "NodeNames[0]", ANY_BUT_STRING),
    ("/filter", NODES_ARGS, ("Nodes",), "Nodes", [1, "x", [], True]),
    ("/filter", NODES_ARGS, ("Nodes", "items"), "Nodes.items", ANY_BUT_LIST),
    ("/filter", NODES_ARGS, ("Nodes", "items", 0), "Nodes.items[0]", ANY_BUT_OBJECT),
    (
        "/prioritize",
        NODES_ARGS,
        ("Nodes", "items", 0, "metadata"),
        "Nodes.items[0].metadata",
        ANY_BUT_OBJECT,
    ),
    (
        "/prioritize",
        NODES_ARGS,
        ("Nodes", "items", 0, "metadata", "name"),
        "Nodes.items[0].metadata.name",
        [*ANY_BUT_STRING, ""],
    ),
    ("/explain", NAMES_ARGS, ("Pod",), "Pod", ANY_BUT_OBJECT),
    ("/bind", BINDING, ("PodName",), "PodName", [*ANY_BUT_STRING, ""]),
    ("/bind", BINDING, ("PodNamespace",), "PodNamespace", [*ANY_BUT_STRING, ""]),
    ("/bind", BINDING, ("PodUID",), "PodUID", ANY_BUT_STRING),
    ("/bind", BINDING, ("Node",), "Node", [*ANY_BUT_STRING, ""]),
    ("/preempt", VICTIMS, ("Pod",), "Pod", ANY_BUT_OBJECT),
    ("/preempt", VICTIMS, ("NodeNameToVictims",), "NodeNameToVictims", [1, "x", [], True]),
    (
        "/preempt",
        VICTIMS,
        ("NodeNameToVictims", "general-a"),
        "NodeNameToVictims.general-a",
        ANY_BUT_OBJECT,
    ),
    (
        "/preempt",
        VICTIMS,
        ("NodeNameToVictims", "general-a", "Pods"),
        "NodeNameToVictims.general-a.Pods",
        ANY_BUT_LIST,
    ),
    (
        "/preempt",
        VICTIMS,
        ("NodeNameToVictims", "general-a", "Pods", 0),
        "NodeNameToVictims.general-a.Pods[0]",
        ANY_BUT_OBJECT,
    ),
    (
        "/preempt",
        VICTIMS,
        ("NodeNameToVictims", "general-a", "NumPDBViolations"),
        "NumPDBViolations",
        [1.5, "0", [], {}, True],
    ),
    ("/preempt", META_VICTIMS, ("NodeNameToMetaVictims",), "NodeNameToMetaVictims", [1, "x", []]),
    (
        "/preempt",
        META_VICTIMS,
        ("NodeNameToMetaVictims", "general-a", "Pods", 0, "UID"),
        "NodeNameToMetaVictims.general-a.Pods[0].UID",
        ANY_BUT_STRING,
    ),
]

WRONG_TYPES: list[Hostile] = [
    Hostile(
        f"{path} {label} = {json.dumps(value)}",
        _with(document, where, value),
        400,
        f"{label}:",
        path=path,
    )
    for path, document, where, label, values in FIELDS
    for value in values
]

MISSING: list[Hostile] = [
    Hostile("filter without Pod", dumps({"NodeNames": ["general-a"]}), 400, "Pod:"),
    Hostile("prioritize without Pod", dumps({"NodeNames": []}), 400, "Pod:", path="/prioritize"),
    Hostile("preempt without Pod", dumps({"NodeNameToVictims": {}}), 400, "Pod:", path="/preempt"),
    Hostile("filter without nodes", dumps({"Pod": POD}), 400, "one of Nodes or NodeNames"),
    Hostile(
        "bind without PodName", dumps({**BINDING, "PodName": None}), 400, "PodName:", path="/bind"
    ),
]

HOSTILE: list[Hostile] = EXPLICIT + WRONG_TYPES + MISSING


def send(server: ExtenderServer, hostile: Hostile) -> Reply:
    if hostile.body is not None and len(hostile.body) > MAX_BODY:
        return _announce_only(server, hostile)
    return server.request(hostile.method, hostile.path, hostile.body, hostile.headers)


def _announce_only(server: ExtenderServer, hostile: Hostile) -> Reply:
    """Send the headers of an oversized request and read the reply: the server refuses it
    from its Content-Length and closes, so a client still sending the body would only see
    a broken pipe."""
    assert hostile.body is not None
    conn = server.connection()
    try:
        conn.putrequest(hostile.method, hostile.path)
        for name, value in {**hostile.headers, "Content-Length": str(len(hostile.body))}.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return Reply(response.status, headers, response.read())
    finally:
        conn.close()


def worker_pids(server: ExtenderServer) -> list[int]:
    """gunicorn's workers: the children of the master (the process the harness started)."""
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return sorted(int(c) for c in children)


def _excerpt(reply: Reply, width: int = 90) -> str:
    text = reply.body[:width].decode("utf-8", errors="replace")
    if len(reply.body) > width:
        text += "…"
    return text.replace("|", "\\|").replace("\n", " ")


def main() -> int:
    """Print the table of docs/reliability.md from a fresh server."""
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp), env={"POLICYEXT_MAX_BODY": str(MAX_BODY)})
        try:
            print("| input | status | reply (start) |")
            print("|---|---|---|")
            for hostile in EXPLICIT + MISSING:
                reply = send(server, hostile)
                print(f"| {hostile.name} | {reply.status} | `{_excerpt(reply)}` |")
            statuses = {send(server, h).status for h in WRONG_TYPES}
            print(
                f"| a wrong type in each field ({len(WRONG_TYPES)} requests) |"
                f" {', '.join(map(str, sorted(statuses)))} | the field's name and what it expects |"
            )
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
