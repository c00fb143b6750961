"""`python -m bench.replay FILE`: a recorded round of the throughput benchmark, replayed in
process (bench/recording.py says how one is recorded).

Each call goes to the extender's direct lane (`lanes.direct_lane`, what the worker's event
loop calls) and its bookkeeping after the reply (with, after a filter reply, the
prioritize reply worked out ahead), each bound pod to the node source's pod watch handler,
in the recorded order, over a node source loaded with the recorded Nodes. Printed: the CPU
time of each part per pod (process time, the median of the repetitions), and how many
replies differ from those kube-scheduler got live. `--sweep MB` writes over that much
memory before each step, outside the timing: live, the scheduler, the API server and etcd
run between two calls and leave the caches cold, and a call costs two to three times what
it costs back to back (docs/performance.md).

`--instructions` counts instead of timing: the replay runs twice under valgrind's
cachegrind (without its cache simulation), once for the first fifth of the steps and once
for all of them, and the difference of the two counts, divided by the pods of the last four
fifths, is the instructions per pod. The count does not drift with the machine's speed as
CPU time does, so two versions of the code can be compared from one run each; it does not
see what a cold cache costs (live, most of a call's time), so a change is still confirmed
by the timings.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from kubernetes import client as k8s

from bench import policy
from bench.recording import Recording
from policyext.cluster.cache import ClusterSource
from policyext.cluster.client import ApiClients
from policyext.policy import PolicySet, load_policy_set
from policyext.server.decisions import DecisionLines
from policyext.server.entrance import Verbs
from policyext.server.lanes import direct_lane, hot_paths
from policyext.server.metrics import Metrics
from policyext.store import PolicyStore

PARTS = ("filter", "after filter", "prioritize", "after prioritize", "pod event")
MAX_BODY = 64 << 20
CACHE_LINE = 64


@dataclass
class Pass:
    """One replay of a recording: CPU seconds per part, and the replies that differed."""

    pods: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    calls: int = 0
    differing: list[str] = field(default_factory=list)  # a line per call answered otherwise
    replies: list[bytes] = field(default_factory=list)  # this replay's, call by call

    def per_pod_ms(self) -> dict[str, float]:
        return {part: 1000 * s / max(self.pods, 1) for part, s in self.seconds.items()}


def replay_once(
    recording: Recording, policies: PolicySet, sweep_mb: int = 0, steps: int | None = None
) -> Pass:
    """Replay `recording` once against a new node source and server state (its first
    `steps` steps only, when given)."""
    store = PolicyStore()
    store.reload(lambda: policies, "replay")
    source = ClusterSource(ApiClients.over(k8s.ApiClient()))  # fed by hand: it never connects
    source.replace("nodes", orjson.loads(orjson.dumps(recording.nodes)))
    source.replace("pods", [])
    lane = direct_lane(Verbs(store, source, Metrics(), time.time_ns, ""), hot_paths(""), MAX_BODY)
    sweep = _sweeper(sweep_mb)
    clock = time.process_time
    result = Pass()
    seconds = result.seconds
    # every step encoded, whatever `steps`: two counts of different lengths then differ by
    # the replay alone (--instructions)
    for step in _encoded(recording)[:steps]:
        sweep()
        if "pod" in step:
            started = clock()
            source.apply("pods", "ADDED", orjson.loads(step["pod"]))
            seconds["pod event"] += clock() - started
            continue
        path, verb = step["path"], step["path"].rsplit("/", 1)[-1]
        if verb not in ("filter", "prioritize"):
            continue  # (bind and preempt go to threads or to Flask, not to the lane)
        started = clock()
        answer = lane(path, step["body"])
        answered = clock()
        if answer is None:
            raise ValueError(f"the direct lane declined a recorded call to {path}")
        _, body, account = answer
        account()
        seconds[verb] += answered - started
        seconds[f"after {verb}"] += clock() - answered
        result.calls += 1
        result.pods += verb == "filter"
        result.replies.append(body)
        if body != step["reply"]:
            result.differing.append(f"{path} #{result.calls}: {_first_difference(body, step)}")
    return result


def _encoded(recording: Recording) -> list[dict[str, bytes | str]]:
    """The steps with their bodies as the server reads them (bytes), encoded before the
    replay so that none of it is timed."""
    steps: list[dict[str, bytes | str]] = []
    for step in recording.steps:
        if "pod" in step:
            steps.append({"pod": orjson.dumps(step["pod"])})
        else:
            steps.append(
                {
                    "path": step["path"],
                    "body": step["body"].encode(),
                    "reply": step["reply"].encode(),
                }
            )
    return steps


def _first_difference(body: bytes, step: dict[str, bytes | str]) -> str:
    live = step["reply"]
    assert isinstance(live, bytes)
    at = next((i for i, (a, b) in enumerate(zip(body, live, strict=False)) if a != b), None)
    if at is None:
        at = min(len(body), len(live))
    return f"byte {at}: {body[at : at + 40]!r} here, {live[at : at + 40]!r} live"


def _sweeper(megabytes: int) -> Callable[[], None]:
    if megabytes <= 0:
        return lambda: None
    memory = bytearray(megabytes << 20)
    ones = b"\x01" * len(memory[::CACHE_LINE])

    def sweep() -> None:
        memory[::CACHE_LINE] = ones  # a write to every cache line of it

    return sweep


# cachegrind's summary line of the instructions executed ("I   refs:      317,662,326")
INSTRUCTIONS_LINE = re.compile(rb"I\s+refs:\s+([\d,]+)")


def instructions_per_pod(
    path: Path, recording: Recording, rules: Path | None, valgrind: str
) -> tuple[float, int]:
    """The instructions per pod of the last four fifths of the recording's steps, and those
    pods: the difference of two runs under cachegrind (see the module's doc). Both run with
    the same hash seed and without threads beside the replay, so that their common part
    (starting, reading the recording, the first fifth) executes the same instructions."""
    warm = len(recording.steps) // 5
    pods = sum(str(step.get("path", "")).endswith("/filter") for step in recording.steps[warm:])
    if pods == 0:
        raise SystemExit(f"{path}: no filter call after the first fifth of its steps")
    first, both = count_instructions(valgrind, path, rules, [warm, len(recording.steps)])
    return (both - first) / pods, pods


def count_instructions(
    valgrind: str, path: Path, rules: Path | None, steps: Sequence[int]
) -> list[int]:
    """The instructions of a replay of the first n steps, for each n of `steps`: each its
    own process under cachegrind, all at once (a count does not depend on what else runs).

    Every module a replay imports, at its start or later on its way, is compiled once
    beforehand into a bytecode cache of this count's own, which the counted runs read and
    never write: otherwise a module imported after the first fifth is compiled by the
    longer run only (tens of millions of instructions, where PYTHONDONTWRITEBYTECODE is
    set, as in CI), or by whichever run gets to it first."""
    with tempfile.TemporaryDirectory(prefix="policyext-bytecode-") as bytecode:
        _compile_what_a_replay_imports(path, rules, max(steps), bytecode)
        runs = [_under_valgrind(valgrind, path, rules, n, bytecode) for n in steps]
        ended = [(run, run.communicate()[1]) for run in runs]  # every one, before any verdict
    counts = []
    for run, stderr in ended:
        counted = INSTRUCTIONS_LINE.findall(stderr)
        if run.returncode != 0 or not counted:
            tail = stderr.decode(errors="replace").strip().splitlines()[-5:]
            raise SystemExit("the replay under valgrind failed: " + " / ".join(tail))
        counts.append(int(counted[-1].replace(b",", b"")))
    return counts


def _compile_what_a_replay_imports(
    path: Path, rules: Path | None, steps: int, bytecode: str
) -> None:
    """A replay of `steps` steps, not counted, that writes the bytecode of every module it
    imports under `bytecode`."""
    environment = {**os.environ, "PYTHONPYCACHEPREFIX": bytecode}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    replayed = subprocess.run(
        [sys.executable, *_replay_arguments(path, rules, steps)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=_PROJECT,
        env=environment,
        check=False,
    )
    if replayed.returncode != 0:
        tail = replayed.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise SystemExit("the replay failed: " + " / ".join(tail))


def _under_valgrind(
    valgrind: str, path: Path, rules: Path | None, steps: int, bytecode: str
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            valgrind,
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            *_replay_arguments(path, rules, steps),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=_PROJECT,
        env={
            **os.environ,
            "PYTHONHASHSEED": "0",
            # numpy's OpenBLAS starts a thread per core at import, which spins for a time
            # that varies (16 million instructions between two runs): one thread, none spins
            "OPENBLAS_NUM_THREADS": "1",
            "PYTHONPYCACHEPREFIX": bytecode,
            "PYTHONDONTWRITEBYTECODE": "1",
        },
    )


_PROJECT = Path(__file__).resolve().parents[1]  # where `-m bench.replay` is found


def _replay_arguments(path: Path, rules: Path | None, steps: int) -> list[str]:
    arguments = ["-m", "bench.replay", str(path.resolve()), "--repeat", "1"]
    arguments += ["--steps", str(steps)]
    if rules is not None:
        arguments += ["--rules", str(rules.resolve())]
    return arguments


def quiet_decision_log() -> None:
    """Decision lines written as the server writes them, to nowhere: their cost counts,
    their text does not matter here."""
    decisions = logging.getLogger("policyext.decisions")
    if not decisions.handlers:
        decisions.addHandler(DecisionLines(open(os.devnull, "w")))  # noqa: SIM115 - for the process
        decisions.propagate = False
    decisions.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__)
    parser.add_argument("recording", type=Path)
    parser.add_argument(
        "--rules", type=Path, help="the policies to serve (default: the benchmark policy)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="replays (default 5)")
    parser.add_argument(
        "--sweep", type=int, default=0, metavar="MB", help="memory written before each step"
    )
    parser.add_argument("--steps", type=int, help="replay the first STEPS steps only")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions per pod under valgrind instead of timing",
    )
    args = parser.parse_args(argv)
    recording = Recording.read(args.recording)
    if args.instructions:
        valgrind = shutil.which("valgrind")
        if valgrind is None:
            parser.error("--instructions needs valgrind on the PATH")
        per_pod, pods = instructions_per_pod(args.recording, recording, args.rules, valgrind)
        print(f"{per_pod:,.0f} instructions per pod (the last {pods} pods of the recording)")
        return 0
    policies = load_policy_set([args.rules]) if args.rules else policy.compiled()
    quiet_decision_log()
    passes = [replay_once(recording, policies, args.sweep, args.steps) for _ in range(args.repeat)]
    for n, one in enumerate(passes, 1):
        parts = one.per_pod_ms()
        print(
            f"replay {n}: {sum(parts.values()):.3f} ms per pod ("
            + ", ".join(f"{part} {ms:.3f}" for part, ms in parts.items())
            + f"), {len(one.differing)} of {one.calls} replies differ from the live ones",
            flush=True,
        )
    medians = {p: statistics.median(one.per_pod_ms()[p] for one in passes) for p in PARTS}
    print(
        f"median over {len(passes)}: {sum(medians.values()):.3f} ms of CPU per pod ("
        + ", ".join(f"{part} {ms:.3f}" for part, ms in medians.items())
        + f"); {passes[0].pods} pods"
    )
    for line in passes[0].differing[:5]:
        print(f"  differs: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
