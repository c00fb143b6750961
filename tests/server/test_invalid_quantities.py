"""A pod whose requests kube-scheduler could not count, sent to the server: the rules that
read `podRequests` fail for it (their failurePolicy decides) and say why; never a silent 0.
Here `gpu-only-for-gpu-pods` (rules/) reads the pod's GPUs: under Fail, the GPU node is
rejected because the rule could not be evaluated, not as if the pod had asked for no GPU."""

from __future__ import annotations

import pytest

from tests.server.harness import ExtenderServer
from tests.server.kube import args_with_names, pod

NODES = ["general-a", "gpu-a"]
RULE = "gpu-only-for-gpu-pods/gpu-nodes-for-gpu-pods"


@pytest.mark.parametrize("value", ["1.5.5", "abc", "", "1e400"])
def test_a_pod_with_an_invalid_request_fails_the_rules_that_read_its_requests(
    demo_server: ExtenderServer, value: str
) -> None:
    args = args_with_names(
        pod("train-3", "ml", requests={"cpu": "1", "nvidia.com/gpu": value}), NODES
    )
    filtered = demo_server.post_json("/filter", args)
    assert filtered.status == 200
    reply = filtered.json()
    assert reply["NodeNames"] == ["general-a"]
    assert reply["FailedAndUnresolvableNodes"] == {"gpu-a": f"{RULE} could not be evaluated"}

    explained = demo_server.post_json("/explain", args)
    assert explained.status == 200
    gpu = next(n for n in explained.json()["nodes"] if n["name"] == "gpu-a")
    (rejection,) = gpu["rejections"]
    assert rejection["error"].startswith(
        "podRequests cannot be read: pod ml/train-3, container app: "
        "spec.containers[0].resources.requests[nvidia.com/gpu]: "
    )
