"""`python -m bench.reports_burst`: what policy reports (`--reports`) cost the API server
during a burst of pods, and whether they slow scheduling.

One real control plane (the e2e harness's etcd and kube-apiserver, no controller manager),
fake Nodes (30 % spot), a policy with an Audit filter that applies to every pod (so every
pod gets a report), and per round two runs on the same cluster, reports off and on, in
alternating order: each run creates its pods while its kube-scheduler is stopped, starts it
(kube-scheduler binds; policyext filters and scores), times the bindings as a watch sees
them, then waits until the extender has written every report (reports on). Between the
start and that point it counts the API server's requests by resource and verb (its own
/metrics, `apiserver_request_total`) and the CPU seconds of kube-apiserver, etcd and the
extender, up to the last binding and, after it, per second (reports on: until the last
report; off: the same processes idle for 30 s, the baseline). Prints a Markdown table;
docs/operations.md ("Policy reports") quotes it.

`--offer` measures instead, in process, what reports add to a filter call (the hand-over
after the reply is sent: `PolicyReports.offer`) against the evaluation it follows.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import yaml

from bench.report import describe_machine
from bench.throughput import (
    CLIENT_CONNECTION,
    BindWatch,
    cpu_seconds,
    create_nodes,
    create_pods,
)
from tests.e2e.binaries import ensure_binaries
from tests.e2e.controlplane import POLICYEXT, ControlPlane, KubeClient
from tests.e2e.extender import Extender, scheduler_config
from tests.e2e.policies import AUDIT_SPOT_NODES
from tests.e2e.rbac import grant_extender_rbac, wait_until_granted
from tests.e2e.reports import grant_report_rights, install_report_crd
from tests.waiting import eventually

REPO_ROOT = Path(__file__).resolve().parent.parent
IDLE_SECONDS = 30
SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
LABEL = re.compile(r'(\w+)="([^"]*)"')


def request_counts(admin: KubeClient) -> Counter[str]:
    """apiserver_request_total by `verb resource[/subresource]`, from the API server."""
    text = str(admin.request("GET", "/metrics", accept="text/plain").get("message", ""))
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        found = SAMPLE.match(line)
        if found is None:
            continue
        labels = dict(LABEL.findall(found["labels"]))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        counts[f"{labels.get('verb', '')} {resource or '(none)'}"] += int(float(found["value"]))
    return counts


def run_once(
    plane: ControlPlane,
    admin: KubeClient,
    kubeconfig: Path,
    rules: Path,
    reports: bool,
    pods: int,
    run: int,
) -> dict[str, object]:
    label = "on" if reports else "off"
    args = ["--audit-events-per-second", "0"] + (["--reports"] if reports else [])
    extender = Extender(plane, kubeconfig, [rules], name=f"policyext-reports-{run}", args=args)
    extender.start()
    scheduler_name = f"reports-{label}-{run}"
    namespace = f"{scheduler_name}-{int(time.time())}"
    admin.create_namespace(namespace)
    document = yaml.safe_load(scheduler_config(extender.url, scheduler_name, bind=False))
    document["clientConnection"] = dict(CLIENT_CONNECTION)
    create_pods(admin, namespace, scheduler_name, pods)
    watch = BindWatch(admin, namespace)
    watch.start()
    groups = {
        "kube-apiserver": plane.components["kube-apiserver"].process,
        "etcd": plane.components["etcd"].process,
        "extender": extender.component.process,
    }
    pids = {name: p.pid for name, p in groups.items() if p is not None}
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    requests_before = request_counts(admin)
    started = time.monotonic()
    plane.start_scheduler(yaml.safe_dump(document), name=scheduler_name)
    try:
        if not watch.wait(pods, 600):
            raise SystemExit(f"{label}: only {len(watch.bound)} of {pods} pods bound in time")
        bound = time.monotonic()
        cpu_bound = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        outcomes: dict[str, float] = {}
        if reports:
            # every bound pod's finding has come to an end: written, or dropped and counted
            eventually(lambda: sum(_outcomes(extender, outcomes).values()) >= pods, 600, 0.5)
        else:  # the same processes idle for a while: what the tail of an `on` run costs anyway
            time.sleep(IDLE_SECONDS)
        done = time.monotonic()
        cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
        tail = {name: cpu[name] - cpu_bound[name] for name in cpu}
        requests = request_counts(admin)
        requests.subtract(requests_before)
    finally:
        watch.stop()
        plane.stop_component(scheduler_name)
        extender.stop()
    times = sorted(watch.bound.values())
    admin.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods", query={"gracePeriodSeconds": "0"}
    )
    return {
        "reports": label,
        "pods per second": (pods - 1) / (times[-1] - times[0]),
        "seconds to bind all": bound - started,
        "seconds to the last report": done - started if reports else None,
        "cpu": {name: round(value, 2) for name, value in cpu_bound.items()},
        # after the last binding: per second (idle, reports off; writing them, on)
        "cpu after, per second": {name: value / (done - bound) for name, value in tail.items()},
        "requests": {k: v for k, v in requests.items() if v > 0},
        "reports written": outcomes.get("written"),
        "reports dropped": outcomes.get("dropped"),
    }


def _outcomes(extender: Extender, into: dict[str, float]) -> dict[str, float]:
    """The extender's policyext_policy_reports_total by result (kept in `into`)."""
    for result in ("written", "failed", "dropped", "unverified", "superseded", "unavailable"):
        into[result] = extender.metric("policyext_policy_reports_total", {"result": result}) or 0
    return into


def measure_offer(nodes: int = 500, offers: int = 20_000) -> str:
    """`offer` for a pod an Audit filter applies to (queued), for one none applies to (the
    early return), and the filter evaluation of `nodes` nodes, in one process."""
    from bench.audit_events import _nodes as audit_nodes
    from policyext.cluster.cache import ClusterSource
    from policyext.cluster.policy_reports import PolicyReports
    from policyext.policy import PolicySet, evaluate, load_policy_texts
    from tests.cluster.fake_core import fake_api

    manifests = audit_nodes()[:nodes]
    pod = {"metadata": {"name": "web", "namespace": "shop", "uid": "u-1"}, "spec": {}}

    class Holder:
        def __init__(self, policies: PolicySet) -> None:
            self.current = policies

    def per_offer(policy: str) -> float:
        policies = load_policy_texts({"rollout.yaml": policy})
        ev = evaluate(policies, pod, manifests, scores=False)
        writer = PolicyReports(
            fake_api(), ClusterSource(fake_api()), Holder(policies), start=False, queue_size=offers
        )
        started = time.perf_counter()
        for _ in range(offers):
            writer.offer(pod, ev)
        return (time.perf_counter() - started) / offers

    queued = per_offer(AUDIT_SPOT_NODES)
    skipped = per_offer(AUDIT_SPOT_NODES.replace("mode: Audit", "mode: Enforce"))
    policies = load_policy_texts({"rollout.yaml": AUDIT_SPOT_NODES})
    evaluations = []
    for _ in range(30):
        started = time.perf_counter()
        evaluate(policies, pod, manifests, scores=False)
        evaluations.append(time.perf_counter() - started)
    return (
        f"offer, an Audit filter applies (queued): {queued * 1e6:.2f} us; offer, none applies:"
        f" {skipped * 1e6:.2f} us; the filter evaluation of {len(manifests)} nodes:"
        f" {statistics.median(evaluations) * 1e3:.2f} ms (median)"
    )


def _per_second(cpu: object) -> str:
    assert isinstance(cpu, dict)
    return ", ".join(
        f"{cpu.get(name, 0) * 1e3:.0f}" for name in ("kube-apiserver", "etcd", "extender")
    )


def _count(value: object) -> str:
    return "" if not isinstance(value, float | int) else f"{value:.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--offer", action="store_true", help="only what offer costs, in process")
    options = parser.parse_args(argv)
    if options.offer:
        print(measure_offer())
        return 0
    binaries = ensure_binaries()
    with tempfile.TemporaryDirectory(prefix="policyext-reports-") as folder:
        work = Path(folder)
        rules = work / "rules"
        rules.mkdir()
        (rules / "rollout.yaml").write_text(AUDIT_SPOT_NODES)
        with ControlPlane(binaries, work / "plane") as plane:
            admin = plane.client()
            grant_extender_rbac(admin)
            install_report_crd(admin)
            grant_report_rights(admin)
            wait_until_granted(plane.client(POLICYEXT))
            kubeconfig = plane.write_kubeconfig(POLICYEXT, work / "policyext.kubeconfig")
            create_nodes(admin, options.nodes)
            results = []
            for round_ in range(options.rounds):
                order = (False, True) if round_ % 2 == 0 else (True, False)
                for reports in order:
                    result = run_once(
                        plane, admin, kubeconfig, rules, reports, options.pods, len(results)
                    )
                    results.append(result)
                    print(result, file=sys.stderr, flush=True)
    print(render(results, options, describe_machine()))
    return 0


def render(results: list[dict[str, object]], options: argparse.Namespace, machine: object) -> str:
    lines = [
        f"{options.pods} pods on {options.nodes} nodes, {options.rounds} rounds, reports off and"
        f" on alternating; machine: {machine}",
        "",
        "| run | reports | pods/s (first to last binding) | s to bind all | s to the last report"
        " | CPU s to the last binding: kube-apiserver, etcd, extender"
        " | after it, CPU ms a second: the same | API requests (all) | of them, report applies"
        " | reports written, dropped |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(results):
        cpu = r["cpu"]
        requests = r["requests"]
        assert isinstance(cpu, dict) and isinstance(requests, dict)
        applies = sum(v for k, v in requests.items() if k.endswith("policyreports"))
        last = r["seconds to the last report"]
        lines.append(
            f"| {i + 1} | {r['reports']} | {r['pods per second']:.1f} "
            f"| {r['seconds to bind all']:.1f} | {'' if last is None else f'{last:.1f}'} "
            f"| {cpu.get('kube-apiserver', 0):.1f}, {cpu.get('etcd', 0):.1f}, "
            f"{cpu.get('extender', 0):.1f} | {_per_second(r['cpu after, per second'])} "
            f"| {sum(requests.values())} | {applies} "
            f"| {_count(r['reports written'])}, {_count(r['reports dropped'])} |"
        )
    lines.append("")
    lines.append("Requests by verb and resource, per run:")
    lines.append("")
    for i, r in enumerate(results):
        requests = r["requests"]
        assert isinstance(requests, dict)
        shown = ", ".join(f"{k} {v}" for k, v in sorted(requests.items(), key=lambda kv: -kv[1]))
        lines.append(f"- run {i + 1} (reports {r['reports']}): {shown}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
