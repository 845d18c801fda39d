package deploy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkNATS checks the NATS server the chart runs for the state plane, when the value set asks
// for one: its StatefulSet and Service select its pod and not the router's (nor the router's
// Service and PodDisruptionBudget its pod), the Service's port is the container's client port,
// and the pod runs as locked down as the router's.
func checkNATS(t *testing.T, r *rendered, vs valueSet) {
	t.Helper()
	if !vs.natsDeployed {
		if r.nats != nil || r.natsService != nil {
			t.Errorf("a NATS server rendered without nats.enabled")
		}
		return
	}
	if r.nats == nil || r.natsService == nil {
		t.Fatalf("nats.enabled: StatefulSet %v, Service %v; want both", r.nats != nil, r.natsService != nil)
	}
	pod := r.nats.Spec.Template
	natsLabels, routerLabels := labels.Set(pod.Labels), labels.Set(r.deployment.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(r.nats.Spec.Selector)
	if err != nil || !sel.Matches(natsLabels) || sel.Matches(routerLabels) {
		t.Errorf("the NATS StatefulSet's selector %v: want its pod's labels %v and not the router's %v", r.nats.Spec.Selector, pod.Labels, routerLabels)
	}
	if s := labels.SelectorFromSet(r.natsService.Spec.Selector); !s.Matches(natsLabels) || s.Matches(routerLabels) {
		t.Errorf("the NATS Service's selector %v: want the NATS pod and not the router's", r.natsService.Spec.Selector)
	}
	if labels.SelectorFromSet(r.service.Spec.Selector).Matches(natsLabels) {
		t.Errorf("the router's Service %v selects the NATS pod", r.service.Spec.Selector)
	}
	if s, _ := metav1.LabelSelectorAsSelector(r.pdb.Spec.Selector); s.Matches(natsLabels) {
		t.Errorf("the PodDisruptionBudget %v selects the NATS pod", r.pdb.Spec.Selector)
	}
	if n := len(pod.Spec.Containers); n != 1 {
		t.Fatalf("the NATS pod has %d containers, want 1", n)
	}
	c := pod.Spec.Containers[0]
	var client int32
	for _, p := range c.Ports {
		if p.Name == "client" {
			client = p.ContainerPort
		}
	}
	if len(r.natsService.Spec.Ports) != 1 || r.natsService.Spec.Ports[0].TargetPort.String() != "client" ||
		r.natsService.Spec.Ports[0].Port != client || client != 4222 {
		t.Errorf("the NATS Service's ports %+v: want 4222 on the container port client (%d)", r.natsService.Spec.Ports, client)
	}
	if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil {
		t.Errorf("the NATS container lacks a probe")
	}
	sc := c.SecurityContext
	if ps := pod.Spec.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("the NATS pod runs as root or on a writable root filesystem")
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("the NATS container has no memory limit")
	}
}
