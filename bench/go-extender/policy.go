package main

import "math"

// The benchmark policy, hard-coded as a Go extender author writes it. The same rules, as
// CEL, are in bench/policy.py; the harness checks the replies of both against each other.

const (
	gpuResource         = "nvidia.com/gpu"
	gpuLabel            = "nvidia.com/gpu.present"
	unschedulableTaint  = "node.kubernetes.io/unschedulable"
	zoneLabel           = "topology.kubernetes.io/zone"
	preferredZoneAnnot  = "scheduling.policyext.io/preferred-zone"
	weightMoreCPU       = 3
	weightPreferredZone = 2
	weightOnDemand      = 1
	weightMostFreeCPU   = 2
)

// podCache is what an informer-fed extender keeps of the bound pods: the millicores they
// request on each node, summed as kube-scheduler sums them.
type podCache map[string]int64

// add counts a bound pod on its node, unless it has finished (Succeeded, Failed): its
// containers no longer hold the resources.
func (c podCache) add(pod *Pod) {
	if pod.Spec.NodeName == "" || pod.Status.Phase == "Succeeded" || pod.Status.Phase == "Failed" {
		return
	}
	c[pod.Spec.NodeName] += effectiveRequest(pod, "cpu")
}

// podFacts are the parts of the pod the rules read, worked out once per request.
type podFacts struct {
	critical      bool
	wantsGPU      bool
	cpuMilli      int64
	preferredZone string
}

func factsOf(pod *Pod) podFacts {
	if pod == nil {
		return podFacts{}
	}
	return podFacts{
		critical:      pod.Metadata.Labels["critical"] == "true",
		wantsGPU:      requests(pod, gpuResource),
		cpuMilli:      effectiveRequest(pod, "cpu"),
		preferredZone: pod.Metadata.Annotations[preferredZoneAnnot],
	}
}

// effectiveRequest is max(sum of the containers, largest init container) plus overhead.
func effectiveRequest(pod *Pod, resource string) int64 {
	var sum int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[resource]; ok {
			sum += q.MilliValue()
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Requests[resource]; ok && q.MilliValue() > sum {
			sum = q.MilliValue()
		}
	}
	if q, ok := pod.Spec.Overhead[resource]; ok {
		sum += q.MilliValue()
	}
	return sum
}

func requests(pod *Pod, resource string) bool {
	for _, cs := range [][]Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if _, ok := c.Resources.Requests[resource]; ok {
				return true
			}
		}
	}
	_, ok := pod.Spec.Overhead[resource]
	return ok
}

// failures returns the messages of the filter rules the node fails (nil: it passes);
// requested is the CPU the node's pods request, in millicores.
func failures(pod podFacts, node *Node, requested int64) []string {
	var failed []string
	if !isReady(node) {
		failed = append(failed, "node is not Ready")
	}
	if pod.critical && node.Metadata.Labels["lifecycle"] == "spot" {
		failed = append(failed, "critical pods avoid spot nodes")
	}
	if _, gpu := node.Metadata.Labels[gpuLabel]; gpu && !pod.wantsGPU {
		failed = append(failed, "GPU nodes are reserved for GPU pods")
	}
	if node.Status.Allocatable["cpu"].MilliValue() < pod.cpuMilli {
		failed = append(failed, "not enough allocatable CPU")
	}
	for _, t := range node.Spec.Taints {
		if t.Key == unschedulableTaint {
			failed = append(failed, "node is cordoned")
			break
		}
	}
	if node.Status.Allocatable["cpu"].MilliValue()-requested < pod.cpuMilli {
		failed = append(failed, "not enough free CPU")
	}
	return failed
}

func isReady(node *Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			return true
		}
	}
	return false
}

// score is floor(Σ w·s / Σ w + 0.5) over the four score rules, each clamped into [0, 10],
// summed in the policy's order (floating-point addition is not associative).
func score(pod podFacts, node *Node, requested int64) int64 {
	allocatable := node.Status.Allocatable["cpu"].MilliValue()
	moreCPU := clamp(float64(allocatable) / 1000 / 16.0 * 10.0)
	var zone, onDemand float64
	if pod.preferredZone != "" && node.Metadata.Labels[zoneLabel] == pod.preferredZone {
		zone = 10
	}
	if node.Metadata.Labels["lifecycle"] == "on-demand" {
		onDemand = 10
	}
	mostFree := clamp(float64(allocatable-requested) / 1000 / 16.0 * 10.0)
	total := weightMoreCPU*moreCPU + weightPreferredZone*zone + weightOnDemand*onDemand +
		weightMostFreeCPU*mostFree
	weights := float64(weightMoreCPU + weightPreferredZone + weightOnDemand + weightMostFreeCPU)
	return int64(math.Floor(total/weights + 0.5))
}

func clamp(s float64) float64 { return math.Min(math.Max(s, 0), 10) }
