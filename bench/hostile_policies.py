"""Policies built to be slow, and the worst wall time of a filter call that runs them.

`python -m bench.hostile_policies` serves the benchmark workload's 500 nodes (NodeNames
mode, from its snapshot) with the example policies plus one hostile policy at a time, and
times a filter call with each (loopback only; each call is given `--timeout` seconds, the
scheduler's default httpTimeout is 5 s). The same table is used by
tests/server/test_hostile_policies.py on the six-node demo cluster.

Expressions that cannot be written are refused when the policy is loaded (LOAD_TIME);
the others are stopped by the cost budget of each evaluation (EVALUATION_TIME).

`python -m bench.hostile_policies --bombs` measures the policies built to take memory
(BOMBS: YAML aliases, nesting, results that grow past the budget) instead: the peak
resident memory of `policyext validate`, of `policyext simulate`, and of a serving worker
that reloads the policy and answers a filter call with it, each in a fresh process.
tests/server/test_hostile_policies.py holds each under PEAK_LIMIT_MB.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.server import Running, peak_mb, serve
from bench.targets import REPO_ROOT
from bench.workload import encode, generate, names_args, write_snapshot


@dataclass(frozen=True)
class HostileRule:
    name: str
    expression: str
    says: str  # a part of the error it must produce (at load, or in /explain); "": none
    per_node: bool = False  # it reads `node`: evaluated once per node, not once per request


def _doubling(seed: str, times: int) -> str:
    """Chains that double `seed` `times` times, each level naming the value with optFlatMap
    (Kubernetes has no `cel.bind`) and concatenating it twice."""
    body = f"optional.of(a{times}.size() > 0)"
    for i in range(times, 0, -1):
        body = f"optional.of(a{i - 1} + a{i - 1}).optFlatMap(a{i}, {body})"
    return f"optional.of({seed}).optFlatMap(a0, {body}).value()"


BUDGET = "cost budget of 1000000 units exceeded"

LOAD_TIME = [
    HostileRule("60 nested parentheses", "(" * 60 + "true" + ")" * 60, "nest"),
    HostileRule("60 nested lists", "size(" + "[" * 60 + "]" * 60 + ") > 0", "nest"),
    HostileRule("a 20,000-character literal", "'" + "x" * 20_000 + "'.size() > 0", "too long"),
    HostileRule(
        "a backreference (RE2 has none)",
        "node.metadata.name.matches('^(a+)+\\\\1$')",
        "invalid regular expression",
    ),
    HostileRule(
        "a lookahead (RE2 has none)",
        "node.metadata.name.matches('(?=a)a*')",
        "invalid regular expression",
    ),
]

EVALUATION_TIME = [
    HostileRule(
        "two nested loops over 1,000 elements, per node",
        "lists.range(1000).all(i, lists.range(1000).all(j, node.metadata.name.size() + i + j > 0))",
        BUDGET,
        per_node=True,
    ),
    HostileRule(
        "two nested loops over 1,000 elements, pod only",
        "lists.range(1000).all(i, lists.range(1000).all(j, i + j >= 0))",
        BUDGET,
    ),
    HostileRule("a string doubled 24 times", _doubling("'" + "x" * 64 + "'", 24), BUDGET),
    HostileRule("a list doubled 24 times", _doubling("lists.range(64)", 24), BUDGET),
    HostileRule(
        "a join of 500,000 strings",
        "lists.range(500000).map(i, 'xxxxxxxxxx').join().size() > 0",
        BUDGET,
    ),
    HostileRule("sorting 100,000 elements", "lists.range(100000).sort().size() > 0", BUDGET),
    HostileRule("lists.range of 10^9 elements", "lists.range(1000000000).size() > 0", "exceed"),
    HostileRule(
        "(a+)+$ over 100,000 characters, per node (RE2: linear)",
        "!(node.metadata.name + lists.range(10000).map(i, 'aaaaaaaaaa').join() + '!')"
        ".matches('^(a+)+$')",
        "",  # within the budget: RE2 matches in linear time
        per_node=True,
    ),
]


def policy_document(rule: HostileRule, failure_policy: str = "Ignore") -> str:
    """One SchedulingPolicy (JSON, which is YAML) holding the rule as its only filter."""
    name = "hostile-" + "".join(c if c.isalnum() else "-" for c in rule.name.lower())
    name = "-".join(part for part in name.split("-") if part)[:63]
    document = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "filters": [{"name": "slow", "expression": rule.expression, "message": "hostile"}],
        },
    }
    return json.dumps(document, indent=1)


def policy_name(rule: HostileRule) -> str:
    return str(json.loads(policy_document(rule))["metadata"]["name"])


# -- policies built to take memory ----------------------------------------------------------
PEAK_LIMIT_MB = 200  # what `validate`, `simulate` and a serving worker may reach with any bomb


@dataclass(frozen=True)
class PolicyBomb:
    name: str
    text: str  # the whole policy file
    refused: str  # a part of the load error; "": it loads, and each evaluation is stopped
    stopped: str = ""  # a part of the evaluation error, when it loads


def _bomb_policy(expression: str, variables: dict[str, str] | None = None) -> str:
    """A SchedulingPolicy (JSON, which is YAML) with the variables and one filter."""
    spec: dict[str, object] = {
        "failurePolicy": "Ignore",
        "filters": [{"name": "bomb", "expression": expression, "message": "hostile"}],
    }
    if variables:
        spec["variables"] = [{"name": k, "expression": v} for k, v in variables.items()]
    document = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "bomb"},
        "spec": spec,
    }
    return json.dumps(document, indent=1)


def _laughs(levels: int, fanout: int) -> str:
    """The "billion laughs": each level a list of `fanout` aliases of the level before."""
    lines = [
        "apiVersion: policyext.io/v1alpha1",
        "kind: SchedulingPolicy",
        "metadata:",
        "  name: lol",
        "  annotations:",
        f"    l0: &l0 [{', '.join(['lol'] * fanout)}]",
    ]
    for i in range(1, levels):
        lines.append(f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]")
    lines.append("spec: {filters: [{name: f, expression: 'true'}]}")
    return "\n".join(lines) + "\n"


# 100,000 characters, from a cheap expression (the budget charges it 70,000 units or so)
_BIG = "lists.range(10000).map(i, 'xxxxxxxxxx').join()"

BOMBS = [
    PolicyBomb(
        f"nested YAML aliases ({len(_laughs(7, 9))} bytes, 4.8 million values)",
        _laughs(7, 9),
        "YAML anchor &l0 is not accepted",
    ),
    PolicyBomb(
        "a YAML value that contains itself",
        "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicy\n"
        "metadata: &m {name: self, annotations: {self: *m}}\n",
        "YAML anchor &m is not accepted",
    ),
    PolicyBomb(
        "YAML nested 100,000 levels deep",
        "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: deep}\n"
        "spec: {filters: " + "[" * 100_000 + "]" * 100_000 + "}\n",
        "YAML nested more than 100 levels deep",
    ),
    PolicyBomb(
        "a 1 MiB list of zeros (340,000 YAML values)",
        "apiVersion: policyext.io/v1alpha1\nkind: SchedulingPolicy\nmetadata: {name: zeros}\n"
        "spec: {filters: [" + "0, " * 340_000 + "]}\n",
        "more than 20,000 YAML values in one file",
    ),
    PolicyBomb(
        "an expression 4,990 parentheses deep",
        _bomb_policy("(" * 4990 + "true" + ")" * 4990),
        "expression nested more than 50 levels deep",
    ),
    PolicyBomb(
        "a 20,000-character literal",
        _bomb_policy("'" + "x" * 20_000 + "'.size() > 0"),
        "too long",
    ),
    PolicyBomb(
        "replace: 9,000 characters, each replaced by 100,000 (900 MB)",
        _bomb_policy("'" + "a" * 9000 + "'.replace('a', variables.big).size() > 0", {"big": _BIG}),
        "",
        BUDGET,
    ),
    PolicyBomb(
        "format: one 100,000-character value printed 9,000 times (900 MB)",
        _bomb_policy(
            "'%s'.format([lists.range(9000).map(i, variables.big)]).size() > 0", {"big": _BIG}
        ),
        "",
        BUDGET,
    ),
    PolicyBomb(
        "join: 9,000 empty strings joined by 100,000 characters (900 MB)",
        _bomb_policy("lists.range(9000).map(i, '').join(variables.big).size() > 0", {"big": _BIG}),
        "",
        BUDGET,
    ),
    PolicyBomb(
        "concatenation: 9,000 copies of 200,000 characters kept in a list (1.8 GB)",
        _bomb_policy(
            "lists.range(9000).map(i, variables.big + variables.big).size() > 0", {"big": _BIG}
        ),
        "",
        BUDGET,
    ),
    PolicyBomb(
        "flatten: one list of 100,000 repeated 1,000 times (800 MB)",
        _bomb_policy(
            "lists.range(1000).map(i, variables.list).flatten().size() > 0",
            {"list": "lists.range(100000)"},
        ),
        "",
        BUDGET,
    ),
]


@dataclass(frozen=True)
class Measured:
    """A command that ran to its end: its exit status, its output, its peak memory."""

    returncode: int
    output: str  # stdout and stderr
    peak_mb: float


# The peak is read by a small Python process that runs the command and asks the kernel for
# its children's peak: a child's count starts from the memory of the process that forked it
# (Linux folds the forked image into it at exec), which for a test run is hundreds of MB.
_MEASURE = """\
import resource, subprocess, sys
status = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(status)
"""


def run_measured(command: Sequence[str], timeout: float = 120.0) -> Measured:
    """Run `command` to its end in a process of its own, and its peak resident memory."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        process = subprocess.Popen(
            [sys.executable, "-c", _MEASURE, str(peak), *command],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so that a hang is ended with the command inside it
        )
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        kilobytes = int(peak.read_text()) if peak.exists() else 0
    text = output.decode("utf-8", errors="replace")
    return Measured(process.returncode, text, kilobytes / 1024)


def policyext_command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "policyext.cli", *map(str, args)]


def validate_bomb(path: Path) -> Measured:
    return run_measured(policyext_command("validate", path))


def simulate_bomb(path: Path) -> Measured:
    fixtures = REPO_ROOT / "rules" / "tests" / ".fixtures"
    pod, snapshot = fixtures / "web-pod.yaml", fixtures / "cluster.yaml"
    command = policyext_command("simulate", path, "--pod", pod, "--snapshot", snapshot)
    return run_measured([*command, "--policies-only", "-o", "json"])


def reload_bomb(
    server: Running, folder: Path, bomb: PolicyBomb, call: Callable[[Running], object]
) -> tuple[dict[str, object], float]:
    """Write the bomb into a folder the server serves, wait until its worker has tried to
    load it, `call` the server (a filter call), and say what the reload did and the
    worker's peak memory so far."""
    before = _last_reload(server)
    (folder / "bomb.yaml").write_text(bomb.text)
    deadline = time.monotonic() + 60
    while (after := _last_reload(server)) == before:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no reload within 60 s of writing {bomb.name}")
        time.sleep(0.1)
    call(server)
    return after, max(peak_mb(pid) for pid in server.worker_pids())


def _last_reload(server: Running) -> dict[str, object]:
    status, body = server.get("/policies")
    if status != 200:
        return {}
    reload: dict[str, object] = json.loads(body).get("lastReload") or {}
    return reload


def _bombs_table(body: bytes, timeout: float) -> None:
    print(
        "| policy | what happens (validate, simulate, serve) | peak MB: validate | simulate |"
        " serving worker |"
    )
    print("|---|---|---|---|---|")
    snapshot = REPO_ROOT / "rules" / "tests" / ".fixtures" / "cluster.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bombs"
        folder.mkdir()
        for bomb in BOMBS:
            path = Path(tmp) / "bomb.yaml"
            path.write_text(bomb.text)
            validated = validate_bomb(path)
            simulated = simulate_bomb(path)
            with serve([REPO_ROOT / "rules", folder], snapshot, Path(tmp) / "log") as server:
                reload, worker = reload_bomb(
                    server, folder, bomb, lambda s: time_filter(s.port, body, timeout)
                )
            (folder / "bomb.yaml").unlink()
            if bomb.refused and not reload.get("ok"):
                outcome = f"refused: `{bomb.refused}`; the reload is rejected"
            elif not bomb.refused and reload.get("ok"):
                outcome = "loads; each evaluation is stopped by the budget"
            else:
                outcome = f"unexpected: the reload says {reload}"
            print(
                f"| {bomb.name} | {outcome} | {validated.peak_mb:.0f} | {simulated.peak_mb:.0f}"
                f" | {worker:.0f} |",
                flush=True,
            )


# -- the measurement -------------------------------------------------------------------------
def time_filter(port: int, body: bytes, timeout: float) -> tuple[str, float]:
    """The outcome ("200", "timeout", ...) and the wall time of one filter call."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.perf_counter()
    try:
        conn.request("POST", "/filter", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return str(response.status), time.perf_counter() - started
    except TimeoutError:
        return "timeout", time.perf_counter() - started
    finally:
        conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_policies", description=__doc__)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per call")
    parser.add_argument(
        "--bombs", action="store_true", help="the peak memory of the BOMBS policies instead"
    )
    args = parser.parse_args(argv)
    if args.bombs:
        demo = json.loads((REPO_ROOT / "examples" / "filter-request.json").read_text())
        _bombs_table(json.dumps(demo).encode(), args.timeout)
        return 0
    workload = generate(args.nodes)
    body = encode(names_args(workload))
    print(f"| hostile rule ({args.nodes} nodes, NodeNames) | status | wall time |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = write_snapshot(workload, Path(tmp) / "snapshot.json")
        for rule in EVALUATION_TIME:
            policy = Path(tmp) / "hostile.yaml"
            policy.write_text(policy_document(rule))
            with serve([REPO_ROOT / "rules", policy], snapshot, Path(tmp) / "log") as server:
                status, seconds = time_filter(server.port, body, args.timeout)
            shown = f"{seconds:.2f} s" if status != "timeout" else f"over {args.timeout:.0f} s"
            print(f"| {rule.name} | {status} | {shown} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
