package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestKVEventsOfPods(t *testing.T) {
	named := corev1.ContainerPort{Name: "kv-events", ContainerPort: 5557}
	tests := []struct {
		name                string
		annotations         map[string]string
		kvPort              intstr.IntOrString
		wantPub, wantReplay string
	}{
		{"none", nil, intstr.IntOrString{}, "", ""},
		{"the config's port", nil, intstr.FromInt32(5557), "tcp://10.0.0.7:5557", ""},
		{"the config's named port", nil, intstr.FromString("kv-events"), "tcp://10.0.0.7:5557", ""},
		{"a named port the pod lacks", nil, intstr.FromString("zmq"), "", ""},
		{"an annotated port over the config's", map[string]string{KVEventsAnnotation: "6000"}, intstr.FromInt32(5557), "tcp://10.0.0.7:6000", ""},
		{"an annotated address", map[string]string{KVEventsAnnotation: "tcp://events.llm:5557", KVEventsReplayAnnotation: "5558"},
			intstr.IntOrString{}, "tcp://events.llm:5557", "tcp://10.0.0.7:5558"},
		{"an annotation that is no address reaches the router", map[string]string{KVEventsAnnotation: "udp://x"}, intstr.FromInt32(5557), "udp://x", ""},
		{"a replay without a publisher", map[string]string{KVEventsReplayAnnotation: "5558"}, intstr.IntOrString{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod("vllm-0", "10.0.0.7", true, map[string]string{"app": "vllm"}, corev1.ContainerPort{ContainerPort: 8000}, named)
			p.Annotations = tt.annotations
			eps, _ := endpointsOf([]*corev1.Pod{p}, target{matchLabels: map[string]string{"app": "vllm"},
				ports: []intstr.IntOrString{intstr.FromInt32(8000)}, kvPort: tt.kvPort})
			if len(eps) != 1 {
				t.Fatalf("endpoints = %v", eps)
			}
			if eps[0].KVEvents != tt.wantPub || eps[0].KVEventsReplay != tt.wantReplay {
				t.Fatalf("kvEvents = %q, replay %q; want %q, %q", eps[0].KVEvents, eps[0].KVEventsReplay, tt.wantPub, tt.wantReplay)
			}
		})
	}
}
