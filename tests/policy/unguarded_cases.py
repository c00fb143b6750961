"""The table of what `validate` warns that a rule reads unguarded (issue 40, item 3): a filter,
and the reads it warns of (none for a safe one). Checked through the CLI
(tests/cli/test_validate_warnings.py) and against the evaluator over pods and nodes with and
without each field and key (tests/policy/test_unguarded_reads.py): a rule warned of fails on
one of them, a rule not warned of fails on none."""

from __future__ import annotations

from typing import Final

CASES: Final[list[tuple[str, list[str]]]] = [
    # optional fields: the README's old headline rule (labels is optional in ObjectMeta)
    ("node.metadata.labels.?lifecycle.orValue('') != 'spot'", ["node.metadata.labels"]),
    ("size(node.spec.taints) == 0", ["node.spec.taints"]),
    ("node.spec.unschedulable != true", ["node.spec.unschedulable"]),
    ("node.spec.taints.exists(t, t.key == 'gpu')", ["node.spec.taints"]),
    # a comprehension's variable is an item of the list: Taint.value is optional
    ("!has(node.spec.taints) || node.spec.taints.all(t, t.value != 'x')", ["t.value"]),
    # a map's key: the field and the key in one warning, however the key is written
    ("node.metadata.labels.zone == 'a'", ["node.metadata.labels['zone']"]),
    ("node.metadata.labels['zone'] == 'a'", ["node.metadata.labels['zone']"]),
    ("pod.metadata.annotations['a'] == 'b'", ["pod.metadata.annotations['a']"]),
    # one warning per path, however often it is read
    (
        "node.metadata.labels.a == 'x' || node.metadata.labels.a == 'y'",
        ["node.metadata.labels['a']"],
    ),
    (
        "node.metadata.labels.a == 'x' || node.metadata.labels.b == 'y'",
        ["node.metadata.labels['a']", "node.metadata.labels['b']"],
    ),
    # a has() of another path guards nothing here
    (
        "has(node.metadata.annotations) && node.metadata.labels.a == 'x'",
        ["node.metadata.labels['a']"],
    ),
    # the map present, its key not: a node with labels but not this one
    (
        "has(node.metadata.labels) && node.metadata.labels.zone == 'a'",
        ["node.metadata.labels['zone']"],
    ),
    (
        "node.metadata.labels.zone == 'a' && has(node.metadata.labels)",
        ["node.metadata.labels['zone']"],
    ),
    (
        "node.metadata.labels.zone != 'a' || !has(node.metadata.labels)",
        ["node.metadata.labels['zone']"],
    ),
    # has(a.b.c) reads a.b: it fails on a node without labels
    ("has(node.metadata.labels.zone)", ["node.metadata.labels"]),
    (
        "has(node.metadata.labels.zone) && node.metadata.labels.zone == 'a'",
        ["node.metadata.labels"],
    ),
    (
        "'zone' in node.metadata.labels ? node.metadata.labels['zone'] == 'a' : false",
        ["node.metadata.labels"],
    ),
    # two tests that would each excuse the other's failure: both fail without labels
    ("has(node.metadata.labels.a) && has(node.metadata.labels.b)", ["node.metadata.labels"]),
    # the other branch of ? : is where the test failed
    (
        "has(node.metadata.labels) ? size(node.metadata.labels) > 1 : size(node.metadata.labels) == 0",
        ["node.metadata.labels"],
    ),
    # a key read with a name: the node's labels need not hold the pod's selector's keys
    (
        "!has(pod.spec.nodeSelector) || pod.spec.nodeSelector.all(k, "
        "node.metadata.labels[k] == pod.spec.nodeSelector[k])",
        ["node.metadata.labels[k]"],
    ),
    (
        "quantity(node.status.allocatable['nvidia.com/gpu']).isGreaterThan(quantity('0'))",
        ["node.status.allocatable['nvidia.com/gpu']"],
    ),
    # what is safe: optional selection and index, and everything chained after them
    ("node.metadata.?labels[?'lifecycle'].orValue('') != 'spot'", []),
    ("node.metadata.?labels.?lifecycle.orValue('') != 'spot'", []),
    ("node.spec.?taints.orValue([]).all(t, t.effect != 'NoSchedule')", []),
    ("node.status.allocatable[?'nvidia.com/gpu'].orValue('0') != '0'", []),
    # inside has()
    ("has(node.metadata.labels)", []),
    # has() of the same path or below it, on either side of && or ||
    ("has(node.spec.taints) && node.spec.taints.exists(t, t.key == 'gpu')", []),
    ("!has(node.spec.taints) || size(node.spec.taints) == 0", []),
    ("size(node.spec.taints) == 0 || !has(node.spec.taints)", []),
    (
        "has(node.metadata.labels) && has(node.metadata.labels.zone) && "
        "node.metadata.labels.zone == 'a'",
        [],
    ),
    # a key tested with `in`, with && and || and ? :
    (
        "has(node.metadata.labels) && 'zone' in node.metadata.labels && "
        "node.metadata.labels['zone'] == 'a'",
        [],
    ),
    (
        "!has(node.metadata.labels) || !('zone' in node.metadata.labels) || "
        "node.metadata.labels.zone != 'a'",
        [],
    ),
    (
        "has(node.metadata.labels) && ('zone' in node.metadata.labels ? "
        "node.metadata.labels['zone'] == 'a' : false)",
        [],
    ),
    (
        "(has(node.metadata.labels) ? 'zone' in node.metadata.labels : false) && "
        "node.metadata.labels.zone == 'a'",
        [],
    ),
    (
        "'nvidia.com/gpu' in node.status.allocatable && "
        "quantity(node.status.allocatable['nvidia.com/gpu']).isGreaterThan(quantity('0'))",
        [],
    ),
    # hasValue() of an optional chain
    (
        "node.metadata.?labels.?zone.hasValue() && node.metadata.labels.zone == 'a'",
        [],
    ),
    # the else branch where the test failed, the then branch where it held
    ("!has(node.metadata.labels) ? false : size(node.metadata.labels) > 1", []),
    ("has(node.spec.taints) ? node.spec.taints.size() == 0 : true", []),
    # a map's own keys, and a key tested in the loop
    (
        "has(node.metadata.labels) && node.metadata.labels.exists(k, "
        "node.metadata.labels[k] == 'x')",
        [],
    ),
    (
        "!has(pod.spec.nodeSelector) || pod.spec.nodeSelector.all(k, "
        "has(node.metadata.labels) && k in node.metadata.labels && "
        "node.metadata.labels[k] == pod.spec.nodeSelector[k])",
        [],
    ),
    # required fields: a Taint always has a key and an effect, a Container a name
    ("node.spec.?taints.orValue([]).all(t, t.key != 'x' && t.effect != 'NoSchedule')", []),
    ("pod.spec.containers.all(c, c.name != '')", []),
    # what every Pod and Node from the API server has
    ("node.metadata.name != '' && pod.metadata.namespace != 'kube-system'", []),
    ("quantity(node.status.allocatable.cpu).isGreaterThan(quantity('1'))", []),
    ("quantity(node.status.capacity['memory']).isGreaterThan(quantity('1Gi'))", []),
    # policyext's own variables are always complete
    ("nodeInfo.free.cpu.compareTo(podRequests.cpu) >= 0", []),
]
