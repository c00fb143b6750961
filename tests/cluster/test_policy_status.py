"""The status of the SchedulingPolicy objects (`--rules-crd`): observedGeneration, a Ready
condition True with the generation served or False with every problem as a field path and
a position, the counts of the printer columns, one byPod entry per replica written with its
own field manager; written only when it would change, retried when the API server is away.
Each replica here is the real watch, sources and writer over a stand-in for the API
(tests/cluster/fake_custom.py); tests/e2e/test_crd.py does the same on a real API server."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyext.cluster.policy_sources import PolicySources
from policyext.cluster.policy_status import Outcome, counts, desired_status
from policyext.cluster.rules_crd import PolicyObjectsWatch, _Handler
from policyext.cluster.status_writer import StatusWriter
from policyext.cluster.watch import Backoff
from policyext.policy import field_path
from policyext.store import PolicyStore
from tests.cluster.fake_core import fake_api
from tests.cluster.fake_custom import FakeCustom
from tests.cluster.policies import BROKEN, rejecting

Json = dict[str, Any]
NOW = "2026-12-06T10:00:00Z"
# the second filter reads a field ObjectMeta does not have
LABELZ = """\
apiVersion: policyext.io/v1alpha1
kind: SchedulingPolicy
metadata:
  name: a
spec:
  filters:
    - name: refuse-a
      expression: "!('spot' in node.metadata.?labels.orValue({}))"
    - name: typo
      expression: "node.metadata.labelz.size() == 0"
"""


def _object(text: str, generation: int) -> Json:
    obj: Json = yaml.safe_load(text)
    name = obj["metadata"]["name"]
    obj["metadata"] |= {"uid": f"u-{name}", "resourceVersion": "1", "generation": generation}
    return obj


class _Replica:
    """One extender replica's watch, sources and status writer (the thread not started:
    `write` runs one pass, `sees` delivers what the watch would)."""

    def __init__(self, custom: FakeCustom, name: str) -> None:
        api = fake_api(custom=custom)
        self.store = PolicyStore()
        self.writer = StatusWriter(api, name, now=lambda: NOW, backoff=Backoff(0.001, 0.01))
        sources = PolicySources(
            self.store, [], objects=True, on_outcomes=self.writer.outcomes_changed
        )
        # the watch fed by hand (`sees`): its own client is never called
        self.watch = PolicyObjectsWatch(
            fake_api(), sources.objects_changed, on_objects=self.writer.objects_seen
        )
        self.custom = custom

    def sees(self) -> None:
        _Handler(self.watch).replace(copy.deepcopy(list(self.custom.objects.values())), 0.0)

    def write(self) -> bool:
        return self.writer.write_pending()


def _status(custom: FakeCustom, name: str = "a") -> Json:
    status: Json = custom.objects[name]["status"]
    return status


def _ready(status: Json) -> Json:
    (ready,) = (c for c in status["conditions"] if c["type"] == "Ready")
    return ready


def _new_generation(custom: FakeCustom, text: str, name: str = "a") -> None:
    """The author's update: a new spec and generation, the status left as it was."""
    obj = custom.objects[name]
    obj["spec"] = yaml.safe_load(text)["spec"]
    obj["metadata"]["generation"] += 1


def test_a_policy_that_loads_is_ready_with_its_generation_counts_and_replica() -> None:
    custom = FakeCustom()
    custom.add(_object(rejecting("a", "spot"), 3))
    replica = _Replica(custom, "policyext-0")
    replica.sees()
    assert replica.write()
    status = _status(custom)
    assert status["observedGeneration"] == 3
    assert (status["filters"], status["scores"], status["mode"]) == (1, 0, "Enforce")
    ready = _ready(status)
    assert (ready["status"], ready["reason"], ready["observedGeneration"]) == ("True", "Served", 3)
    assert ready["lastTransitionTime"] == NOW
    assert status["byPod"] == [
        {
            "pod": "policyext-0",
            "observedGeneration": 3,
            "servingGeneration": 3,
            "status": "True",
            "lastTransitionTime": NOW,
        }
    ]
    assert [(name, manager) for name, manager, _ in custom.applies] == [
        ("a", "policyext/policyext-0")
    ]


def test_a_broken_generation_is_not_ready_with_each_problem_by_field_path_and_position() -> None:
    custom = FakeCustom()
    custom.add(_object(rejecting("a", "spot"), 1))
    replica = _Replica(custom, "policyext-0")
    replica.sees()
    replica.write()
    _new_generation(custom, LABELZ)
    replica.sees()
    assert replica.write()
    status = _status(custom)
    ready = _ready(status)
    assert (ready["status"], ready["reason"], ready["observedGeneration"]) == (
        "False",
        "Invalid",
        2,
    )
    assert ready["message"].startswith("generation 2 is not served (generation 1 keeps serving): ")
    assert "spec.filters[1].expression: 1:15: no field 'labelz' in ObjectMeta" in ready["message"]
    (entry,) = status["byPod"]
    assert (entry["status"], entry["observedGeneration"], entry["servingGeneration"]) == (
        "False",
        2,
        1,
    )
    assert entry["message"].startswith("spec.filters[1].expression: 1:15: no field 'labelz'")
    assert status["observedGeneration"] == 2 and status["filters"] == 2
    # the last good generation serves meanwhile
    [served] = replica.store.current.policies
    assert [f.rule.name for f in served.filters] == ["refuse-a"]

    _new_generation(custom, rejecting("a", "gpu"))
    replica.sees()
    replica.write()
    assert _ready(_status(custom))["status"] == "True"
    assert "message" not in _status(custom)["byPod"][0]


def test_a_written_status_coming_back_through_the_watch_writes_and_reloads_nothing() -> None:
    custom = FakeCustom()
    custom.add(_object(rejecting("a", "spot"), 1))
    replica = _Replica(custom, "policyext-0")
    replica.sees()
    replica.write()
    reloads = replica.store.reloads_ok + replica.store.reloads_failed
    for _ in range(3):
        replica.sees()  # the MODIFIED event of the status write: a new resourceVersion
        assert replica.write()
    assert len(custom.applies) == 1
    assert replica.store.reloads_ok + replica.store.reloads_failed == reloads


def test_two_replicas_each_write_their_own_entry_and_agree_on_the_rest() -> None:
    custom = FakeCustom()
    custom.add(_object(rejecting("a", "spot"), 1))
    first, second = _Replica(custom, "policyext-0"), _Replica(custom, "policyext-1")
    for replica in (first, second, first, second):
        replica.sees()
        replica.write()
    status = _status(custom)
    assert {e["pod"]: e["status"] for e in status["byPod"]} == {
        "policyext-0": "True",
        "policyext-1": "True",
    }
    assert _ready(status)["message"] == "generation 1 is served by 2 of the replicas that read it"
    managers = [manager for _, manager, _ in custom.applies]
    assert managers == ["policyext/policyext-0", "policyext/policyext-1"]  # then: nothing new
    # each sends its own entry only: the other's is never in what it applies
    assert all(len(sent["byPod"]) == 1 for _, _, sent in custom.applies)


def test_a_replica_that_has_not_read_the_new_generation_writes_nothing() -> None:
    obj = _object(rejecting("a", "spot"), 2)
    assert desired_status(obj, "policyext-1", Outcome(1, 1), NOW) is None
    assert desired_status(obj, "policyext-1", Outcome(2, 2), NOW) is not None


def test_a_replica_that_refused_the_generation_makes_it_not_ready_for_all() -> None:
    obj = _object(rejecting("a", "spot"), 2)
    obj["status"] = {
        "byPod": [
            {"pod": "policyext-1", "observedGeneration": 2, "status": "False", "message": "x"},
            {"pod": "policyext-2", "observedGeneration": 1, "status": "False", "message": "y"},
        ]
    }
    status = desired_status(obj, "policyext-0", Outcome(2, 2), NOW)
    assert status is not None
    ready = status["conditions"][0]
    assert (ready["status"], ready["reason"]) == ("False", "RefusedByReplica")
    assert ready["message"] == "pod policyext-1 refused generation 2: x"  # not the older one


def test_status_writes_are_retried_with_backoff_while_the_api_server_is_away() -> None:
    custom = FakeCustom(failures=3)
    custom.add(_object(rejecting("a", "spot"), 1))
    replica = _Replica(custom, "policyext-0")
    replica.writer.start()
    try:
        replica.sees()
        assert custom.written.wait(60), replica.writer.last_error
    finally:
        replica.writer.stop()
    assert replica.writer.counts == {"written": 1, "failed": 3, "pruned": 0}
    assert _ready(_status(custom))["status"] == "True"


@pytest.mark.parametrize(
    ("line", "column", "path"),
    [
        (10, 23, "spec.filters[1].expression"),  # inside the expression
        (9, 7, "spec.filters[1]"),  # where the rule starts
        (9, 15, "spec.filters[1].name"),
        (4, 9, "metadata.name"),
        (1, 1, ""),  # the document itself
    ],
)
def test_a_position_in_the_object_is_named_by_its_field_path(
    line: int, column: int, path: str
) -> None:
    assert field_path(LABELZ, line, column) == path


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"filters": [{}], "scores": [{}, {}]}, {"filters": 1, "scores": 2, "mode": "Enforce"}),
        (
            {"filters": [{"mode": "Audit"}], "scores": [{"mode": "Audit"}]},
            {"filters": 1, "scores": 1, "mode": "Audit"},
        ),
        ({"filters": [{"mode": "Audit"}, {}]}, {"filters": 2, "scores": 0, "mode": "Mixed"}),
    ],
)
def test_the_printer_columns_count_the_rules_and_fold_their_modes(
    spec: Json, expected: Json
) -> None:
    assert counts(spec) == expected


def _outcomes(paths: list[str], *objects: Json) -> dict[str, Outcome]:
    """What a worker reports for `objects` after one reload with the files of `paths`."""
    reported: list[dict[str, Outcome]] = []
    sources = PolicySources(PolicyStore(), paths, objects=True, on_outcomes=reported.append)
    watch = PolicyObjectsWatch(fake_api(), sources.objects_changed)
    _Handler(watch).replace(list(objects), 0.0)
    return reported[-1]


def test_an_object_that_loads_alone_but_not_with_the_files_is_rejected_not_invalid(
    tmp_path: Path,
) -> None:
    (tmp_path / "b.yaml").write_text(rejecting("b", "gpu"), encoding="utf-8")
    outcomes = _outcomes(
        [str(tmp_path)], _object(rejecting("a", "spot"), 1), _object(rejecting("b", "zone"), 4)
    )
    assert outcomes["a"] == Outcome(1, 1)
    taken = outcomes["b"]
    assert (taken.generation, taken.serving, taken.reason) == (4, None, "Rejected")
    assert "duplicate policy name" in taken.problems[0]


def test_a_broken_file_leaves_every_new_object_generation_rejected_with_the_files_problem(
    tmp_path: Path,
) -> None:
    (tmp_path / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    outcomes = _outcomes([str(tmp_path)], _object(rejecting("a", "spot"), 2))
    assert (outcomes["a"].reason, outcomes["a"].serving) == ("Rejected", None)
    assert outcomes["a"].problems[0].startswith(str(tmp_path / "broken.yaml"))


def _pruning(custom: FakeCustom, name: str, pods: dict[str, bool | None]) -> _Replica:
    """A replica whose writer asks `pods` whether a replica's pod still exists."""
    replica = _Replica(custom, name)
    replica.writer.alive = pods.get
    return replica


def test_the_entry_of_a_replica_whose_pod_is_gone_is_removed_by_its_own_field_manager() -> None:
    custom = FakeCustom()
    custom.add(_object(rejecting("a", "spot"), 1))
    pods: dict[str, bool | None] = {"policyext-0": True, "policyext-1": True}
    first, second = _pruning(custom, "policyext-0", pods), _pruning(custom, "policyext-1", pods)
    for replica in (first, second, first):
        replica.sees()
        replica.write()
    assert sorted(e["pod"] for e in _status(custom)["byPod"]) == ["policyext-0", "policyext-1"]
    assert _ready(_status(custom))["message"].startswith("generation 1 is served by 2 ")

    pods["policyext-1"] = False  # its pod deleted: the pod cache no longer has it
    first.sees()
    assert first.write()
    assert [e["pod"] for e in _status(custom)["byPod"]] == ["policyext-0"]
    # removed by an apply of nothing as the gone replica's own manager, once this replica
    # shares every field that one wrote (its own apply of the same values just before)
    mine, pruning = custom.applies[-2:]
    assert mine[:2] == ("a", "policyext/policyext-0")
    assert [e["pod"] for e in mine[2]["byPod"]] == ["policyext-0"]
    assert pruning == ("a", "policyext/policyext-1", None)  # no status at all: it owns none
    assert first.writer.counts["pruned"] == 1
    # and the summary says so at the next pass
    first.sees()
    first.write()
    assert _ready(_status(custom))["message"].startswith("generation 1 is served by 1 ")
    applies = len(custom.applies)
    first.sees()
    first.write()
    assert len(custom.applies) == applies  # settled


@pytest.mark.parametrize(
    ("alive", "why"),
    [
        (True, "its pod exists (a terminating pod too)"),
        (None, "the pod cache has not listed the pods yet"),
    ],
)
def test_the_entry_of_a_replica_is_kept_unless_its_pod_is_known_gone(
    alive: bool | None, why: str
) -> None:
    custom = FakeCustom()
    custom.add(_object(rejecting("a", "spot"), 1))
    pods: dict[str, bool | None] = {"policyext-0": True, "policyext-1": True}
    first, second = _pruning(custom, "policyext-0", pods), _pruning(custom, "policyext-1", pods)
    for replica in (first, second):
        replica.sees()
        replica.write()
    pods["policyext-1"] = alive
    first.sees()
    first.write()
    assert len(_status(custom)["byPod"]) == 2, why
    assert first.writer.counts["pruned"] == 0


def test_without_a_replica_namespace_no_entry_is_ever_removed() -> None:
    custom = FakeCustom()
    obj = _object(rejecting("a", "spot"), 1)
    obj["status"] = {"byPod": [{"pod": "gone", "observedGeneration": 1, "status": "True"}]}
    custom.add(obj)
    replica = _Replica(custom, "policyext-0")  # alive: None, as without --replica-namespace
    replica.sees()
    replica.write()
    assert sorted(e["pod"] for e in _status(custom)["byPod"]) == ["gone", "policyext-0"]


def test_an_entry_another_writer_owns_is_left_alone_after_one_try() -> None:
    custom = FakeCustom()
    obj = _object(rejecting("a", "spot"), 1)
    # written by hand (kubectl edit --subresource status): no apply of policyext/gone owns it
    obj["status"] = {"byPod": [{"pod": "gone", "observedGeneration": 1, "status": "True"}]}
    custom.add(obj)
    replica = _pruning(custom, "policyext-0", {"policyext-0": True, "gone": False})
    for _ in range(3):
        replica.sees()
        assert replica.write()
    managers = [m for _, m, _ in custom.applies]
    assert managers.count("policyext/gone") == 1
    assert managers.count("policyext/policyext-0") == 1  # its entry, then nothing new
    assert "gone" in {e["pod"] for e in _status(custom)["byPod"]}
