package kube

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParsePool(t *testing.T) {
	p, err := parsePool(testPool("llama", map[string]string{"app": "vllm", "model": "llama"}, 8000, 8001))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "selector app=vllm,model=llama, targetPorts 8000,8001" {
		t.Errorf("pool = %s", got)
	}
	// A generic JSON decoder's float64 is a port too.
	f := testPool("llama", map[string]string{"app": "vllm"})
	f.Object["spec"].(map[string]any)["targetPorts"] = []any{map[string]any{"number": float64(8000)}}
	if p, err := parsePool(f); err != nil || !slices.Equal(p.ports, []int32{8000}) {
		t.Errorf("float64 port: %v, %v", p.ports, err)
	}

	bad := func(edit func(spec map[string]any)) *unstructured.Unstructured {
		u := testPool("llama", map[string]string{"app": "vllm"}, 8000)
		edit(u.Object["spec"].(map[string]any))
		return u
	}
	nine := []any{}
	for i := range 9 {
		nine = append(nine, map[string]any{"number": int64(8000 + i)})
	}
	for _, tt := range []struct {
		name string
		u    *unstructured.Unstructured
		want string
	}{
		{"no selector", bad(func(s map[string]any) { delete(s, "selector") }), "spec.selector.matchLabels is empty: the pool would take every pod of the namespace"},
		{"selector of numbers", bad(func(s map[string]any) { s["selector"] = map[string]any{"matchLabels": map[string]any{"a": int64(1)}} }),
			"spec.selector.matchLabels must map label names to strings: .spec.selector.matchLabels accessor error: contains non-string value in the map under key \"a\": 1 is of the type int64, expected string"},
		{"no ports", bad(func(s map[string]any) { delete(s, "targetPorts") }), "spec.targetPorts is empty: the pool names no port to send requests to"},
		{"nine ports", bad(func(s map[string]any) { s["targetPorts"] = nine }), "spec.targetPorts has 9 entries; accepted: 1 to 8"},
		{"port 0", bad(func(s map[string]any) { s["targetPorts"] = []any{map[string]any{"number": int64(0)}} }), "spec.targetPorts[0].number is 0; accepted: 1 to 65535"},
		{"port as a string", bad(func(s map[string]any) { s["targetPorts"] = []any{map[string]any{"number": "http"}} }), "spec.targetPorts[0].number is http; accepted: 1 to 65535"},
		{"port twice", bad(func(s map[string]any) {
			s["targetPorts"] = []any{map[string]any{"number": int64(8000)}, map[string]any{"number": int64(8000)}}
		}), "spec.targetPorts[1].number 8000 is listed twice"},
		{"port entry not a map", bad(func(s map[string]any) { s["targetPorts"] = []any{int64(8000)} }), "spec.targetPorts[0] is int64, not {number: PORT}"},
	} {
		if _, err := parsePool(tt.u); err == nil || err.Error() != tt.want {
			t.Errorf("%s: parsePool = %v\n want %s", tt.name, err, tt.want)
		}
	}
}
