package main

import (
	"reflect"
	"testing"
)

func quantity(t *testing.T, s string) Quantity {
	t.Helper()
	var q Quantity
	if err := q.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
		t.Fatal(err)
	}
	return q
}

func testNode(t *testing.T, cpu, lifecycle, zone string, ready bool, taints ...string) *Node {
	status := "True"
	if !ready {
		status = "False"
	}
	n := &Node{}
	n.Metadata.Name = "n"
	n.Metadata.Labels = map[string]string{"lifecycle": lifecycle, zoneLabel: zone}
	n.Status.Allocatable = ResourceList{"cpu": quantity(t, cpu)}
	n.Status.Conditions = []NodeCondition{{Type: "Ready", Status: status}}
	for _, key := range taints {
		n.Spec.Taints = append(n.Spec.Taints, Taint{Key: key, Effect: "NoSchedule"})
	}
	return n
}

func testPod(t *testing.T, critical bool, cpus ...string) podFacts {
	pod := &Pod{}
	pod.Metadata.Labels = map[string]string{}
	if critical {
		pod.Metadata.Labels["critical"] = "true"
	}
	pod.Metadata.Annotations = map[string]string{preferredZoneAnnot: "eu-west-1b"}
	for _, cpu := range cpus {
		pod.Spec.Containers = append(pod.Spec.Containers, Container{
			Resources: ResourceRequirements{Requests: ResourceList{"cpu": quantity(t, cpu)}},
		})
	}
	return factsOf(pod)
}

func TestFailures(t *testing.T) {
	gpuNode := testNode(t, "7910m", "on-demand", "eu-west-1a", true, gpuResource)
	gpuNode.Metadata.Labels[gpuLabel] = "true"
	cases := []struct {
		name      string
		pod       podFacts
		node      *Node
		requested int64
		want      []string
	}{
		{"a fitting on-demand node passes", testPod(t, true, "500m", "100m"), testNode(t, "3920m", "on-demand", "eu-west-1a", true), 0, nil},
		{"critical pods avoid spot", testPod(t, true, "500m"), testNode(t, "3920m", "spot", "eu-west-1a", true), 0, []string{"critical pods avoid spot nodes"}},
		{"other pods may use spot", testPod(t, false, "500m"), testNode(t, "3920m", "spot", "eu-west-1a", true), 0, nil},
		{"the containers' requests add up", testPod(t, false, "500m", "100m"), testNode(t, "500m", "on-demand", "eu-west-1a", true), 0, []string{"not enough allocatable CPU", "not enough free CPU"}},
		{"every failure is reported", testPod(t, false, "1"), testNode(t, "500m", "on-demand", "eu-west-1a", false, unschedulableTaint), 0, []string{"node is not Ready", "not enough allocatable CPU", "node is cordoned", "not enough free CPU"}},
		{"the CPU the node's pods request is not free", testPod(t, false, "500m", "100m"), testNode(t, "3920m", "on-demand", "eu-west-1a", true), 3400, []string{"not enough free CPU"}},
		{"exactly the free CPU fits", testPod(t, false, "500m", "100m"), testNode(t, "3920m", "on-demand", "eu-west-1a", true), 3320, nil},
		{"GPU nodes are for GPU pods", testPod(t, false, "500m"), gpuNode, 0, []string{"GPU nodes are reserved for GPU pods"}},
	}
	for _, c := range cases {
		if got := failures(c.pod, c.node, c.requested); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: failures = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestScore(t *testing.T) {
	cases := []struct {
		cpu, lifecycle, zone string
		requested            int64
		want                 int64
	}{
		{"15890m", "on-demand", "eu-west-1b", 15890, 7}, // (3*9.93 + 20 + 10 + 0) / 8 = 7.47
		{"15890m", "on-demand", "eu-west-1b", 0, 10},    // (3*9.93 + 20 + 10 + 2*9.93) / 8 = 9.98
		{"3920m", "spot", "eu-west-1a", 1920, 1},        // (3*2.45 + 2*1.25) / 8 = 1.23
		{"32", "spot", "eu-west-1a", 0, 6},              // both CPU scores clamped to 10: 50 / 8
		{"7910m", "spot", "eu-west-1b", 9000, 4},        // (3*4.94 + 20 + 0, negative clamped) / 8 = 4.35
	}
	for _, c := range cases {
		got := score(testPod(t, true, "500m"), testNode(t, c.cpu, c.lifecycle, c.zone, true), c.requested)
		if got != c.want {
			t.Errorf("score(%s, %s, %s, %d) = %d, want %d", c.cpu, c.lifecycle, c.zone, c.requested, got, c.want)
		}
	}
}

func TestPodCache(t *testing.T) {
	pod := func(node, phase string, containers, inits []string, overhead string) *Pod {
		p := &Pod{}
		p.Spec.NodeName = node
		p.Status.Phase = phase
		for _, cpu := range containers {
			p.Spec.Containers = append(p.Spec.Containers, Container{Resources: ResourceRequirements{Requests: ResourceList{"cpu": quantity(t, cpu)}}})
		}
		for _, cpu := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, Container{Resources: ResourceRequirements{Requests: ResourceList{"cpu": quantity(t, cpu)}}})
		}
		if overhead != "" {
			p.Spec.Overhead = ResourceList{"cpu": quantity(t, overhead)}
		}
		return p
	}
	cache := podCache{}
	cache.add(pod("a", "Running", []string{"500m", "0.25"}, nil, ""))   // 750
	cache.add(pod("a", "Pending", []string{"100m"}, []string{"1"}, "")) // the init container: 1000
	cache.add(pod("a", "Running", []string{"100m"}, nil, "250m"))       // with overhead: 350
	cache.add(pod("a", "Succeeded", []string{"4"}, nil, ""))            // finished: not counted
	cache.add(pod("a", "Failed", []string{"4"}, nil, ""))               // finished: not counted
	cache.add(pod("", "Pending", []string{"4"}, nil, ""))               // not bound
	cache.add(pod("b", "Running", []string{"2"}, nil, ""))
	if want := (podCache{"a": 2100, "b": 2000}); !reflect.DeepEqual(cache, want) {
		t.Errorf("pod cache = %v, want %v", cache, want)
	}
}
