"""A recorded round of the throughput benchmark: written and read back, merged in time
order, recorded through the proxy, and replayed in process with the live replies checked."""

from __future__ import annotations

import http.client
import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import policy, replay, throughput
from bench.recording import Recording, RecordingProxy, merge
from bench.replay import PARTS, replay_once

Json = dict[str, Any]


def _node(name: str) -> Json:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, node: str = "") -> Json:
    pod: Json = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["metadata"]["resourceVersion"] = "2"
    return pod


def _call(verb: str, pod: Json, names: list[str], reply: str = "") -> Json:
    body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).decode()
    return {"path": f"/{verb}", "body": body, "status": 200, "reply": reply}


def _round() -> Recording:
    """Two pods of one CPU each on two nodes of one CPU: the first is bound to node-a
    between them, so the second's filter passes node-b alone."""
    return Recording(
        [_node("node-a"), _node("node-b")],
        [
            _call("filter", _pod("first"), ["node-a", "node-b"]),
            _call("prioritize", _pod("first"), ["node-a", "node-b"]),
            {"pod": _pod("first", "node-a")},
            _call("filter", _pod("second"), ["node-a", "node-b"]),
            _call("prioritize", _pod("second"), ["node-b"]),
        ],
    )


def _with_replies(recording: Recording, replies: list[bytes]) -> Recording:
    given = iter(replies)
    steps = [s if "pod" in s else {**s, "reply": next(given).decode()} for s in recording.steps]
    return Recording(recording.nodes, steps)


def test_a_recording_is_read_back_as_it_was_written(tmp_path: Path) -> None:
    path = tmp_path / "round.jsonl"
    _round().write(path)
    assert Recording.read(path) == _round()


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "empty"), (b'{"path": "/filter"}\n', "holds no nodes"), (b"[1, 2]\n", "no nodes")],
)
def test_a_file_that_is_not_a_recording_is_refused(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "other.jsonl"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=reason):
        Recording.read(path)


def test_calls_and_bound_pods_are_merged_in_time_order_a_call_first_at_the_same_instant() -> None:
    calls = [(1.0, {"path": "/filter"}), (3.0, {"path": "/prioritize"})]
    bound = [(0.5, {"pod": "early"}), (3.0, {"pod": "same instant"}), (4.0, {"pod": "late"})]
    merged = merge(calls, bound, [])
    assert merged.steps == [
        {"pod": "early"},
        {"path": "/filter"},
        {"path": "/prioritize"},
        {"pod": "same instant"},
        {"pod": "late"},
    ]


@pytest.fixture
def upstream() -> Iterator[str]:
    """A server answering each POST with its path and body, as JSON."""

    class Echo(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            reply = orjson.dumps({"path": self.path, "body": body.decode()})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_proxy_passes_each_call_on_and_notes_it_with_its_reply(upstream: str) -> None:
    proxy = RecordingProxy(upstream).start()
    try:
        connection = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=30)
        replies = []
        for path, body in (("/filter", b'{"a":1}'), ("/prioritize", b'{"b":2}')):
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            replies.append((answer.status, answer.getheader("Content-Type"), answer.read()))
        connection.close()
    finally:
        proxy.stop()
    assert replies == [
        (200, "application/json", b'{"path":"/filter","body":"{\\"a\\":1}"}'),
        (200, "application/json", b'{"path":"/prioritize","body":"{\\"b\\":2}"}'),
    ]
    assert [call for _, call in proxy.calls] == [
        {"path": path, "body": body, "status": 200, "reply": reply.decode()}
        for (path, body), (_, _, reply) in zip(
            (("/filter", '{"a":1}'), ("/prioritize", '{"b":2}')), replies, strict=True
        )
    ]


def test_a_replay_applies_the_bound_pods_between_the_calls_and_checks_every_reply() -> None:
    policies = policy.compiled()
    first = replay_once(_round(), policies)  # the recording's replies are empty: all differ
    assert (first.calls, first.pods, len(first.differing)) == (4, 2, 4)
    assert set(first.seconds) == set(PARTS)
    second_filter = orjson.loads(first.replies[2])
    assert second_filter["NodeNames"] == ["node-b"]  # node-a is full since the first pod
    assert list(second_filter["FailedNodes"]) == ["node-a"]
    again = replay_once(_with_replies(_round(), first.replies), policies, sweep_mb=1)
    assert again.differing == []
    assert again.replies == first.replies


@pytest.mark.parametrize(
    "argv",
    [
        ["--record", "round.jsonl"],
        ["--record", "round.jsonl", "--only", "stock"],
        ["--record", "round.jsonl", "--only", "Go extender, bench policy"],
        ["--record", "round.jsonl", "--only", "policyext, bench policy", "--rounds", "2"],
    ],
)
def test_only_one_round_of_one_policyext_run_is_recorded(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        throughput.main(argv)
    assert stopped.value.code == 2
    assert "--record goes with --only, a policyext run, and --rounds 1" in capsys.readouterr().err


def test_the_replay_command_prints_the_cpu_per_pod_and_the_replies_that_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answered = replay_once(_round(), policy.compiled())
    path = tmp_path / "round.jsonl"
    recording = _with_replies(_round(), answered.replies)
    recording.steps[-1] = {**recording.steps[-1], "reply": "[]"}  # not what it answers
    recording.write(path)

    assert replay.main([str(path), "--repeat", "2", "--sweep", "1"]) == 0

    out = capsys.readouterr().out
    assert out.count("1 of 4 replies differ from the live ones") == 2  # a line per replay
    assert "ms of CPU per pod (filter " in out and "; 2 pods" in out
    assert "differs: /prioritize #4: byte 1:" in out  # (both begin with "[")


def test_a_replay_of_the_first_steps_stops_after_them() -> None:
    partial = replay_once(_round(), policy.compiled(), steps=2)
    assert (partial.calls, partial.pods) == (2, 1)  # the first pod's filter and prioritize


def _busy_round(pods: int) -> Recording:
    """`pods` pods of one CPU each, filtered, prioritized and bound in turn, on two nodes
    with room for all of them."""
    nodes = [_node("node-a"), _node("node-b")]
    for node in nodes:
        node["status"]["allocatable"]["cpu"] = str(pods)
    steps: list[Json] = []
    for i in range(pods):
        name = f"pod-{i}"
        steps += [
            _call("filter", _pod(name), ["node-a", "node-b"]),
            _call("prioritize", _pod(name), ["node-a", "node-b"]),
            {"pod": _pod(name, "node-a" if i % 2 else "node-b")},
        ]
    return Recording(nodes, steps)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_instruction_count_is_per_pod_of_the_steps_after_the_first_fifth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "round.jsonl"
    _busy_round(10).write(path)  # 30 steps: the first 6 are the common part

    assert replay.main([str(path), "--instructions"]) == 0

    out = capsys.readouterr().out
    counted = re.fullmatch(
        r"([\d,]+) instructions per pod \(the last 8 pods of the recording\)\n", out
    )
    assert counted is not None, out
    # a filter, a prioritize and an event over two nodes: far more than nothing, far less
    # than the interpreter's start (billions, in both runs: the difference cancels it)
    assert 10_000 < int(counted.group(1).replace(",", "")) < 20_000_000


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_two_counts_of_the_same_replay_agree_within_a_tenth_of_a_percent(tmp_path: Path) -> None:
    path = tmp_path / "round.jsonl"
    _busy_round(10).write(path)
    valgrind = shutil.which("valgrind")
    assert valgrind is not None
    first, second = replay.count_instructions(valgrind, path, None, [30, 30])
    assert abs(first - second) < first / 1000  # what makes a per-pod difference readable


def test_counting_instructions_without_valgrind_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "round.jsonl"
    _round().write(path)
    monkeypatch.setattr(replay.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit) as stopped:
        replay.main([str(path), "--instructions"])
    assert stopped.value.code == 2
    assert "--instructions needs valgrind on the PATH" in capsys.readouterr().err
