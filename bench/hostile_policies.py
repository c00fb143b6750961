"""Policies built to be slow, and the worst wall time of a filter call that runs them.

`python -m bench.hostile_policies` serves the benchmark workload's 500 nodes (NodeNames
mode, from its snapshot) with the example policies plus one hostile policy at a time, and
times a filter call with each (loopback only; each call is given `--timeout` seconds, the
scheduler's default httpTimeout is 5 s). The same table is used by
tests/server/test_hostile_policies.py on the six-node demo cluster.

Expressions that cannot be written are refused when the policy is loaded (LOAD_TIME);
the others are stopped by the cost budget of each evaluation (EVALUATION_TIME).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.server import serve
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
    HostileRule(
        "comprehensions nested three deep",
        "[1].all(a, [1].all(b, [1].all(c, true)))",
        "comprehensions nested more than 2 deep",
    ),
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
    args = parser.parse_args(argv)
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
