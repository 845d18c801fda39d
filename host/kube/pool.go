package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pool is the part of an InferencePool's spec the router follows: which pods, on which ports.
// spec.endpointPickerRef is not read: the router is the endpoint picker.
type pool struct {
	matchLabels map[string]string
	ports       []int32
}

// String is how logs show the pool: `app=vllm ports 8000,8001`.
func (p pool) String() string {
	ports := make([]string, len(p.ports))
	for i, n := range p.ports {
		ports[i] = strconv.Itoa(int(n))
	}
	return fmt.Sprintf("selector %s, targetPorts %s", selectorString(p.matchLabels), strings.Join(ports, ","))
}

// parsePool reads spec.selector.matchLabels (a non-empty map of strings: an empty one would take
// every pod of the namespace) and spec.targetPorts (1 to MaxTargetPorts entries {number: 1..65535},
// each once) from an InferencePool as the dynamic client returns it. Its errors name the field.
func parsePool(u *unstructured.Unstructured) (pool, error) {
	var p pool
	labels, found, err := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
	switch {
	case err != nil:
		return p, fmt.Errorf("spec.selector.matchLabels must map label names to strings: %v", err)
	case !found || len(labels) == 0:
		return p, fmt.Errorf("spec.selector.matchLabels is empty: the pool would take every pod of the namespace")
	}
	p.matchLabels = labels
	ports, found, err := unstructured.NestedSlice(u.Object, "spec", "targetPorts")
	switch {
	case err != nil:
		return p, fmt.Errorf("spec.targetPorts: %v", err)
	case !found || len(ports) == 0:
		return p, fmt.Errorf("spec.targetPorts is empty: the pool names no port to send requests to")
	case len(ports) > MaxTargetPorts:
		return p, fmt.Errorf("spec.targetPorts has %d entries; accepted: 1 to %d", len(ports), MaxTargetPorts)
	}
	for i, entry := range ports {
		m, ok := entry.(map[string]any)
		if !ok {
			return p, fmt.Errorf("spec.targetPorts[%d] is %T, not {number: PORT}", i, entry)
		}
		n, ok := portNumber(m["number"])
		if !ok {
			return p, fmt.Errorf("spec.targetPorts[%d].number is %v; accepted: 1 to 65535", i, m["number"])
		}
		if slices.Contains(p.ports, n) {
			return p, fmt.Errorf("spec.targetPorts[%d].number %d is listed twice", i, n)
		}
		p.ports = append(p.ports, n)
	}
	return p, nil
}

// portNumber reads a JSON number as a port (wholeNumber): 1 to 65535.
func portNumber(v any) (int32, bool) {
	n, ok := wholeNumber(v)
	if !ok || n < 1 || n > 65535 {
		return 0, false
	}
	return int32(n), true
}
