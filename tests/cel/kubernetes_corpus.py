"""Expressions for the parity tests against Kubernetes' CEL (test_kubernetes_parity.py).

ACCEPTED are realistic rules of the kind ValidatingAdmissionPolicies write about Pods and
Nodes: both must accept them and agree on their values over tests/cel/kubernetes_objects.
REFUSED are mistakes, one of each kind the checker catches: both must refuse them.
`generated()` adds an expression per field of the objects, with a misspelling of it, a
presence test and comparisons with literals of each type: both must agree on each.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from tests.cel.kubernetes_objects import NODE, POD

ACCEPTED: Final = [
    # tolerations against taints
    "node.spec.taints.all(t, t.effect != 'NoSchedule' || pod.spec.tolerations.exists(tol, "
    "tol.key == t.key && (tol.operator == 'Exists' || tol.value == t.value)))",
    "node.spec.?taints.orValue([]).exists(t, t.key == 'lifecycle' && t.value == 'spot')",
    "pod.spec.?tolerations.orValue([]).map(t, t.key)",
    "node.spec.taints.filter(t, has(t.timeAdded)).map(t, t.timeAdded)",
    "pod.spec.tolerations.exists(t, t.?tolerationSeconds.orValue(0) > 60)",
    "pod.spec.tolerations.filter(t, t.operator == 'Exists').size()",
    # conditions
    "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
    "node.status.conditions.filter(c, c.type == 'Ready')[0].lastHeartbeatTime"
    " > timestamp('2026-03-02T00:00:00Z')",
    "node.status.conditions.all(c, c.type == 'Ready' || c.status == 'False')",
    "node.status.conditions.exists_one(c, c.reason.startsWith('Kubelet') && c.type == 'Ready')",
    "node.status.conditions.map(c, c.lastTransitionTime)",
    # addresses and CIDRs
    "node.status.addresses.exists(a, a.type == 'InternalIP' && isIP(a.address)"
    " && cidr('10.0.0.0/16').containsIP(a.address))",
    "node.status.addresses.filter(a, a.type == 'InternalIP').map(a, ip(a.address).family())",
    "cidr(node.spec.podCIDR).prefixLength()",
    "node.spec.podCIDRs.all(c, isCIDR(c))",
    "cidr('10.0.0.0/8').containsCIDR(node.spec.podCIDR)",
    "node.status.addresses.exists(a, a.type == 'Hostname' && a.address == node.metadata.name)",
    # kubelet versions
    "semver(node.status.nodeInfo.kubeletVersion, true).isGreaterThan(semver('1.30.0'))",
    "isSemver(node.status.nodeInfo.kubeletVersion, true)",
    "semver(node.status.nodeInfo.kubeletVersion, true).minor() >= 30",
    "semver(node.status.nodeInfo.kubeletVersion.substring(1)).major()",
    "node.status.nodeInfo.containerRuntimeVersion.startsWith('containerd://')",
    # images
    "pod.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
    "pod.spec.containers.exists(c, c.image.endsWith(':latest'))",
    "pod.spec.containers.all(c, c.image.matches('^[a-z0-9./-]+(:[A-Za-z0-9._-]+)?$'))",
    "pod.spec.containers.map(c, c.image.split('/')[0])",
    "node.status.images.exists(i, i.names.exists(n, n.startsWith('docker.io/library/nginx')))",
    "node.status.images.map(i, i.sizeBytes).sum()",
    "pod.spec.?initContainers.orValue([]).all(c, c.image.contains('/payments/'))",
    # owner references
    "pod.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'ReplicaSet'"
    " && o.controller == true)",
    "has(pod.metadata.ownerReferences)"
    " && pod.metadata.ownerReferences[0].apiVersion.startsWith('apps/')",
    "pod.metadata.ownerReferences.filter(o, o.?controller.orValue(false)).size() == 1",
    "pod.metadata.ownerReferences.all(o, o.kind != 'Job')",
    # quantities
    "quantity(node.status.allocatable.cpu).isGreaterThan(quantity('4'))",
    "quantity(node.status.allocatable['memory']).compareTo(quantity('16Gi')) > 0",
    "pod.spec.containers.all(c, !has(c.resources.limits)"
    " || quantity(c.resources.limits.cpu).isLessThan(quantity('4')))",
    "quantity(node.status.allocatable.cpu).asApproximateFloat()",
    "quantity(pod.spec.containers[0].resources.requests.memory).asInteger()",
    "'nvidia.com/gpu' in node.status.allocatable",
    "node.status.allocatable.?foo.orValue('0')",
    "sign(quantity('-1'))",
    "quantity('1').add(2).isInteger()",
    # labels, names, times
    "node.metadata.labels['topology.kubernetes.io/zone'] in ['eu-west-1a', 'eu-west-1b']",
    "node.metadata.labels.?lifecycle.orValue('') != 'spot'"
    " || pod.spec.?tolerations.orValue([]).exists(t, t.key == 'lifecycle')",
    "pod.metadata.namespace.startsWith('pay')",
    "pod.metadata.labels.filter(k, k.startsWith('app')).size()",
    "node.metadata.creationTimestamp < pod.metadata.creationTimestamp",
    "pod.metadata.creationTimestamp - node.metadata.creationTimestamp > duration('24h')",
    "node.metadata.creationTimestamp.getFullYear()",
    "pod.spec.priority >= 1000 && pod.spec.priorityClassName == 'high'",
    "pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    ".nodeSelectorTerms.exists(t, t.matchExpressions.exists(e, e.key =="
    " 'topology.kubernetes.io/zone' && node.metadata.labels[e.key] in e.values))",
    "pod.spec.containers[0].readinessProbe.httpGet.port == 8080",
    "pod.spec.containers.exists(c, c.?securityContext.?runAsNonRoot.orValue(false))",
    "pod.spec.nodeSelector.all(k, node.metadata.labels[k] == pod.spec.nodeSelector[k])",
    "node.metadata.labels.exists(k, v, k.endsWith('/zone') && v.startsWith('eu-'))",
    "pod.spec.containers.map(c, c.name).join(',')",
    "node.status.?nodeInfo.?architecture.orValue('') == 'amd64'",
    "node.metadata.?deletionTimestamp.hasValue()",
    "pod.status.phase == 'Pending' && pod.status.qosClass != 'BestEffort'",
    # the string extensions, format and the lists library as Kubernetes 1.37 has them
    "'%s | %.1f'.format([['a', 'b'], 12345.0])",
    "'%s on %s'.format([pod.metadata.name, node.metadata.name])",
    "'%d containers, %x'.format([size(pod.spec.containers), 255])",
    "'%s'.format([{'k': 1}])",
    "'%e'.format([1234.5])",
    "'%b %o'.format([5, 8])",
    "'%.3s'.format(['abcdef'])",
    "'%s'.format([duration('90s')])",
    "'%s %s'.format([true, null])",
    "[3, 1, 2].includes(2)",
    "pod.spec.containers.map(c, c.name).includes('app')",
    "[1, 2, 3].sum()",
    "[3, 1, 2].min()",
    "['b', 'a'].isSorted()",
    "[1, 2, 3].indexOf(2)",
    "[1, 2, 3, 2].lastIndexOf(2)",
    "duration('1h30m').getHours()",
    "duration('90s').getMinutes()",
    "duration('1.5s').getMilliseconds()",
    "duration('2h').getSeconds()",
    "'a,b,c'.split(',').size()",
    "'  x '.trim()",
    "'Hello'.lowerAscii()",
    "'abc'.charAt(1)",
    "'abcabc'.lastIndexOf('b')",
    "'abc'.substring(1)",
    "'a-b-c'.replace('-', '.')",
    "strings.quote('a\"b')",
    "sets.contains([1, 2, 3], [1])",
    "sets.intersects(['a'], ['a', 'b'])",
    "url('https://example.com:8443/x?y=1').getPort()",
    "[1, 2, 3].slice(1, 2)",
    "[[1], [2, 3]].flatten()",
    "[3, 1, 2].sort()",
    "[1, 1, 2].distinct()",
    "lists.range(3)",
    "['b', 'aa'].sortBy(s, size(s))",
    "[1, 2].first()",
    "'%s'.format([1e20])",
    "'%s %s %s %s'.format([123456.0, 1234567.0, 0.0001, -0.00001234])",
    "'%s'.format([[1.5, 'x', b'y', timestamp('2020-01-01T00:00:00Z'), duration('90s'),"
    " {'b': 2, 'a': 1.0}, null, true, int, [2]]])",
    "'%s %s %s'.format([b'abc', 2.0, 1e-7])",
    "'%.2f %f %.0f'.format([1234567.891, -0.5, 2.5])",
    "'%.2e %e'.format([0.000123, -5.0])",
    "'%x %X %x %o %b %b'.format(['hi', b'\\xff', 255u, 8, 5, true])",
    "'%s'.format([{1: 'a', 2: 'b'}])",
    "'%s %s'.format([double('NaN'), double('-Inf')])",
    "'%s'.format([[double('NaN')]])",
    # strings quoted inside a list or a map: control characters and non-printing runes as
    # Go's strconv.Quote writes them (\x01, \x7f, \u00a0, \U000e0001), invalid UTF-8 bytes too
    "'%s'.format([['a\\x01b', 'c\\x7fd', 'e\\u00a0f', 'g\\U000e0001h', 'tab\\tx\\\\']])",
    "'%s'.format([{'k\\x02': 1}])",
    "'%s'.format([[b'\\x01\\xc3\\xa9']])",
    "'%s'.format([[b'\\x01\\xff']])",  # not UTF-8: an error, as Kubernetes says
    "'%s'.format([b'\\xc3\\xa9\\xff'])",
    "'%s'.format(['tab\\there \"quoted\"'])",
    "'%s'.format([['tab\\there \"quoted\"']])",
]

REFUSED: Final = [
    # cel-go libraries Kubernetes' environment does not declare
    "math.greatest(1, 2)",
    "base64.encode(b'a')",
    "cel.bind(x, 1, x + 1)",
    # misspelt fields: in a selection, an optional selection, has(), a macro's variable
    "node.metadata.?lables[?'node-role/critical'].orValue('') != 'true'",
    "node.metadata.lables['zone'] == 'a'",
    "has(node.spec.unschedulabel)",
    "node.spec.taints.exists(t, t.efect == 'NoSchedule')",
    "pod.spec.containres.size() > 0",
    "node.status.allocatble.cpu == '1'",
    "pod.spec.tolerations.exists(t, t.operater == 'Exists')",
    "node.status.conditions.exists(c, c.typ == 'Ready')",
    "pod.metadata.ownerReferences.exists(o, o.knd == 'Job')",
    "node.status.nodeInfo.kubeletVerison",
    "pod.spec.containers.all(c, c.resources.limit.cpu == '1')",
    # types that can never match
    "node.metadata.name.startsWith(1)",
    "node.status.allocatable.cpu > 4",
    "node.metadata.name == 1",
    "1 == 1.0",
    "pod.spec.priority + 'a'",
    "node.metadata.labels == null",
    "!node.metadata.name",
    "node.spec.unschedulable + 1",
    "size(pod.spec.priority)",
    "int(node.metadata.labels)",
    "timestamp(1.5)",
    "node.metadata['name']",
    "node.metadata.creationTimestamp == '2026-03-01T08:15:30Z'",
    "pod.spec.containers.all(c, c.image)",
    "pod.spec.containers.exists(c, c.name)",
    "pod.spec.containers.filter(c, c.ports)",
    "node.status.conditions[0].status ? 1 : 2",
    "pod.spec.priority.startsWith('1')",
    "quantity(1)",
    "semver(node.status.nodeInfo.kubeletVersion, 'true')",
    # what Kubernetes' environment does not have
    "'abc'.reverse()",
    "quantity('1').sign()",
    "string(optional.of(1))",
    "[1, 'a']",
    "{'a': 1, 'b': 'c'}",
    "[pod.metadata.name, pod.spec.priority]",
    # a constant format string checked against its arguments
    "'%d %d'.format([1.5, 2])",
    "'%s'.format(['a', 'b'])",
    "'%s %s'.format(['a'])",
    "'%s'.format([pod.metadata.name, 1])",
    "'%f'.format([1])",
    "'%d'.format([pod.metadata.name])",
]

_IDENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _paths(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every field of a decoded object as a CEL path; list elements through index 0."""
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            if _IDENT.match(key):
                yield from _paths(inner, f"{path}.{key}")
            else:
                yield from _paths(inner, f"{path}[{key!r}]")
    elif isinstance(value, list) and value:
        yield from _paths(value[0], f"{path}[0]")


def _misspelt(name: str) -> str:
    """The name with two letters swapped (or one dropped): a typo a person makes."""
    if len(name) >= 4:
        return name[:1] + name[2] + name[1] + name[3:]
    return name[:-1]


def generated() -> list[str]:
    out: list[str] = []
    for root, obj in (("pod", POD), ("node", NODE)):
        for path, value in _paths(obj, root):
            out.append(path)
            head, _, last = path.rpartition(".")
            if not head or not _IDENT.match(last):
                continue
            out.append(f"{head}.{_misspelt(last)}")
            out.append(f"has({path})")
            out.append(f"{head}.?{last}.hasValue()")
            out.extend(f"{path} == {literal}" for literal in ("'x'", "1", "1.5", "true"))
            if isinstance(value, str):
                out.append(f"{path}.size() > 3 && {path}.startsWith('a')")
            if isinstance(value, list):
                out.append(f"{path}.size()")
    return out
