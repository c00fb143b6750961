"""NodePorts: the host ports the pod asks for must be free on the node."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import HostPort, NodeState, host_ports
from policyext.offline.scheduler.status import Pod, Rejected

NAME: Final = "NodePorts"
REASON: Final = "node(s) didn't have free ports for the requested pod ports"
_ANY_IP: Final = "0.0.0.0"


def _conflict(wanted: HostPort, used: HostPort) -> bool:
    ip, protocol, port = wanted
    used_ip, used_protocol, used_port = used
    if (protocol, port) != (used_protocol, used_port):
        return False
    return _ANY_IP in (ip, used_ip) or ip == used_ip


def check(pod: Pod, node: NodeState) -> Rejected | None:
    wanted = host_ports(pod.obj)
    if any(_conflict(w, u) for w in wanted for u in node.used_ports):
        return Rejected(NAME, (REASON,), False)
    return None
