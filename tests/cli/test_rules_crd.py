"""`--rules-crd` of `simulate --cluster` and `explain --cluster`: the cluster's
SchedulingPolicy objects listed once (every page) and loaded as `serve --rules-crd` loads
them, through the fake API seam (tests/cluster/fake_core.py); an object that does not load
is left out and said by its field path, and the flag wants --cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from policyext.cli.inputs import crd_rules
from policyext.cluster import watch
from policyext.cluster.listing import schedulingpolicy_objects
from tests.cli.run import RULES, policyext
from tests.cluster.fake_core import fake_api
from tests.cluster.fake_custom import FakeCustom

Json = dict[str, Any]
EXAMPLES = sorted(RULES.glob("*.yaml"))


def _stored(obj: Json, generation: int = 1) -> Json:
    """As the API server keeps it: with what it adds, and a status."""
    meta = obj["metadata"]
    meta |= {"uid": f"u-{meta['name']}", "resourceVersion": "7", "generation": generation}
    meta["managedFields"] = [{"manager": "kubectl", "operation": "Apply"}]
    obj["status"] = {"observedGeneration": generation, "conditions": []}
    return obj


def _custom(*objects: Json) -> FakeCustom:
    custom = FakeCustom()
    for obj in objects:
        custom.add(obj)
    return custom


def _examples() -> list[Json]:
    return [_stored(yaml.safe_load(path.read_text())) for path in EXAMPLES]


def test_every_page_of_objects_is_read_as_the_watch_names_and_writes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch, "PAGE_SIZE", 2)
    custom = _custom(*_examples())
    listed = schedulingpolicy_objects(fake_api(custom=custom))
    assert custom.lists == (len(EXAMPLES) + 1) // 2
    names = sorted(f"schedulingpolicy/{o['metadata']['name']}" for o in _examples())
    assert sorted(listed.texts) == names
    assert set(listed.generations.values()) == {1}
    for text in listed.texts.values():  # what the author wrote, not what the server added
        assert "managedFields" not in text and "status" not in text


def test_the_objects_are_the_policy_set_validate_makes_of_the_files(
    capsys: pytest.CaptureFixture[str],
) -> None:
    served = crd_rules(fake_api(custom=_custom(*_examples())))
    assert served is not None
    from_files = policyext("validate", *EXAMPLES, "-o", "json")
    assert served.version == json.loads(from_files.stdout)["version"]
    assert capsys.readouterr().err == ""


def test_an_object_that_does_not_load_is_left_out_and_said_by_field_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    typo = {
        "apiVersion": "policyext.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "typo"},
        "spec": {"filters": [{"name": "t", "expression": "node.metadata.labelz.size() == 0"}]},
    }
    served = crd_rules(fake_api(custom=_custom(*_examples(), _stored(typo, 4))))
    assert served is not None
    assert "typo" not in {p.name for p in served.policies}
    assert len(served.policies) == len(EXAMPLES)
    assert capsys.readouterr().err.splitlines() == [
        "warning: left out: schedulingpolicy/typo: spec.filters[0].expression: 1:15: "
        "no field 'labelz' in ObjectMeta; did you mean 'labels'?"
    ]


def test_an_object_named_as_a_file_gives_way_to_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    served = crd_rules(fake_api(custom=_custom(*_examples())), [str(EXAMPLES[0])])
    assert served is not None
    assert len(served.policies) == len(EXAMPLES)
    err = capsys.readouterr().err
    assert err.startswith(f"warning: left out: schedulingpolicy/{EXAMPLES[0].stem}: ")
    assert "duplicate policy name" in err


def test_no_objects_at_all_is_an_empty_set() -> None:
    served = crd_rules(fake_api(custom=_custom()))
    assert served is not None and served.policies == ()


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--rules-crd", "--pod", "p.yaml", "--snapshot", "s.yaml"],
        ["explain", "ns/pod", "--rules-crd", "--snapshot", "s.yaml"],
    ],
    ids=["simulate", "explain"],
)
def test_rules_crd_goes_with_cluster(args: list[str]) -> None:
    result = policyext(*args)
    assert result.returncode == 2
    assert "--rules-crd reads the live cluster: it goes with --cluster" in result.stderr


def test_explain_takes_one_source_of_policies() -> None:
    result = policyext("explain", "ns/pod", "--rules-crd", "--rules", "r/", "--cluster")
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr
