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
		name string
		pod  podFacts
		node *Node
		want []string
	}{
		{"a fitting on-demand node passes", testPod(t, true, "500m", "100m"), testNode(t, "3920m", "on-demand", "eu-west-1a", true), nil},
		{"critical pods avoid spot", testPod(t, true, "500m"), testNode(t, "3920m", "spot", "eu-west-1a", true), []string{"critical pods avoid spot nodes"}},
		{"other pods may use spot", testPod(t, false, "500m"), testNode(t, "3920m", "spot", "eu-west-1a", true), nil},
		{"the containers' requests add up", testPod(t, false, "500m", "100m"), testNode(t, "500m", "on-demand", "eu-west-1a", true), []string{"not enough allocatable CPU"}},
		{"every failure is reported", testPod(t, false, "1"), testNode(t, "500m", "on-demand", "eu-west-1a", false, unschedulableTaint), []string{"node is not Ready", "not enough allocatable CPU", "node is cordoned"}},
		{"GPU nodes are for GPU pods", testPod(t, false, "500m"), gpuNode, []string{"GPU nodes are reserved for GPU pods"}},
	}
	for _, c := range cases {
		if got := failures(c.pod, c.node); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: failures = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestScore(t *testing.T) {
	cases := []struct {
		cpu, lifecycle, zone string
		want                 int64
	}{
		{"15890m", "on-demand", "eu-west-1b", 10}, // (3*9.93 + 20 + 10) / 6 = 9.97
		{"3920m", "spot", "eu-west-1a", 1},        // 3*2.45 / 6 = 1.225
		{"32", "spot", "eu-west-1a", 5},           // more-cpu clamped to 10: 30 / 6
		{"7910m", "spot", "eu-west-1b", 6},        // (3*4.94 + 20) / 6 = 5.8
	}
	for _, c := range cases {
		if got := score(testPod(t, true, "500m"), testNode(t, c.cpu, c.lifecycle, c.zone, true)); got != c.want {
			t.Errorf("score(%s, %s, %s) = %d, want %d", c.cpu, c.lifecycle, c.zone, got, c.want)
		}
	}
}
