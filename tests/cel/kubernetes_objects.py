"""A Pod and a Node as the API server returns them, for the parity tests: tolerations and
taints, conditions, addresses, versions, images, owner references, quantities."""

from __future__ import annotations

from typing import Any, Final

NODE: Final[dict[str, Any]] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "worker-a1",
        "uid": "5f0c7c2e-8d3b-4a51-9a53-2f1e0f8b6a11",
        "resourceVersion": "48213",
        "creationTimestamp": "2026-03-01T08:15:30Z",
        "labels": {
            "kubernetes.io/hostname": "worker-a1",
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": "eu-west-1a",
            "node.kubernetes.io/instance-type": "m6i.2xlarge",
            "lifecycle": "spot",
        },
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "providerID": "aws:///eu-west-1a/i-0abc",
        "taints": [
            {"key": "lifecycle", "value": "spot", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/unreachable",
                "effect": "NoExecute",
                "timeAdded": "2026-03-02T10:00:00Z",
            },
        ],
    },
    "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
        "allocatable": {
            "cpu": "7910m",
            "memory": "31Gi",
            "pods": "110",
            "ephemeral-storage": "95Gi",
            "nvidia.com/gpu": "1",
        },
        "conditions": [
            {
                "type": "MemoryPressure",
                "status": "False",
                "reason": "KubeletHasSufficientMemory",
                "lastHeartbeatTime": "2026-03-02T11:59:00Z",
                "lastTransitionTime": "2026-03-01T08:16:00Z",
            },
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": "2026-03-02T11:59:30Z",
                "lastTransitionTime": "2026-03-01T08:16:30Z",
            },
        ],
        "addresses": [
            {"type": "InternalIP", "address": "10.0.1.17"},
            {"type": "Hostname", "address": "worker-a1"},
            {"type": "InternalIP", "address": "fd00::17"},
        ],
        "nodeInfo": {
            "machineID": "ec2a",
            "systemUUID": "ec2a",
            "bootID": "b1",
            "kernelVersion": "6.8.0-1021-aws",
            "osImage": "Ubuntu 24.04.2 LTS",
            "containerRuntimeVersion": "containerd://2.1.3",
            "kubeletVersion": "v1.37.2",
            "kubeProxyVersion": "v1.37.2",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
        "images": [
            {"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368},
            {
                "names": ["docker.io/library/nginx@sha256:abc", "docker.io/library/nginx:1.27"],
                "sizeBytes": 72000000,
            },
        ],
    },
}

POD: Final[dict[str, Any]] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "checkout-7d9f8-x2x4q",
        "namespace": "payments",
        "uid": "0b9d3f4e-1c2a-4e5f-8a7b-6c5d4e3f2a1b",
        "creationTimestamp": "2026-03-02T11:58:00Z",
        "labels": {"app": "checkout", "tier": "critical", "pod-template-hash": "7d9f8"},
        "annotations": {"prometheus.io/scrape": "true"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "checkout-7d9f8",
                "uid": "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "schedulerName": "default-scheduler",
        "priorityClassName": "high",
        "priority": 100000,
        "serviceAccountName": "checkout",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [
            {"key": "lifecycle", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/payments/checkout:2.4.1",
                "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "512Mi"},
                    "limits": {"cpu": "2", "memory": "1Gi"},
                },
                "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
            },
            {
                "name": "sidecar",
                "image": "docker.io/envoyproxy/envoy:v1.31.0",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            },
        ],
        "initContainers": [
            {"name": "migrate", "image": "registry.example.com/payments/migrate:2.4.1"}
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["eu-west-1a", "eu-west-1b"],
                                }
                            ]
                        }
                    ]
                }
            }
        },
    },
    "status": {"phase": "Pending", "qosClass": "Burstable"},
}
