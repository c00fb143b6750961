"""ImageLocality: nodes that already have the pod's images (node.status.images) score
higher, the more so the bigger the images and the more nodes have them."""

from __future__ import annotations

from typing import Final

from policyext.offline.scheduler.cluster import NodeState, normalized_image
from policyext.offline.scheduler.selectors import as_list, as_map
from policyext.offline.scheduler.status import MAX_NODE_SCORE, Pod

NAME: Final = "ImageLocality"
_MB: Final = 1024 * 1024
_MIN_THRESHOLD: Final = 23 * _MB
_MAX_PER_CONTAINER: Final = 1000 * _MB


def scores(
    pod: Pod, nodes: list[NodeState], image_nodes: dict[str, int], total_nodes: int
) -> list[int]:
    containers = as_list(pod.spec.get("initContainers")) + as_list(pod.spec.get("containers"))
    images = [normalized_image(str(as_map(c).get("image") or "")) for c in containers]
    highest = _MAX_PER_CONTAINER * len(containers)
    out = []
    for node in nodes:
        total = 0
        for image in images:
            size = node.images.get(image)
            if size is not None and total_nodes:
                total += int(size * (image_nodes.get(image, 0) / total_nodes))
        total = (
            min(max(total, _MIN_THRESHOLD), highest) if highest > _MIN_THRESHOLD else _MIN_THRESHOLD
        )
        span = highest - _MIN_THRESHOLD
        out.append(MAX_NODE_SCORE * (total - _MIN_THRESHOLD) // span if span > 0 else 0)
    return out
