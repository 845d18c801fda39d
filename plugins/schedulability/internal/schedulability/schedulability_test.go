package schedulability

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// cycleOf returns a cycle of endpoints a, b, c, … with the given labels (nil: no labels).
func cycleOf(labels ...map[string]string) *sdk.Cycle {
	c := &sdk.Cycle{}
	for i, l := range labels {
		c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: string(rune('a' + i)), Labels: l})
	}
	return c
}

func TestUnschedulableEndpointsAreBlocked(t *testing.T) {
	const key = "foresight.io/schedulable"
	no, yes := map[string]string{key: "false"}, map[string]string{key: "true"}
	tests := []struct {
		name   string
		params string
		labels []map[string]string
		kept   []int
		reason string
	}{
		{"only false blocks; true, no label and other labels keep", "",
			[]map[string]string{no, yes, nil, {"zone": "z1"}}, []int{1, 2, 3},
			`3 of 4 schedulable (1 with foresight.io/schedulable in ["false"])`},
		{"the value is compared exactly", "",
			[]map[string]string{{key: "False"}, {key: ""}}, []int{0, 1}, "all 2 schedulable"},
		{"all unschedulable: none kept, the pipeline's 503", "",
			[]map[string]string{no, no}, []int{}, `all 2 unschedulable (foresight.io/schedulable in ["false"])`},
		{"no endpoints", "", nil, []int{}, "all 0 schedulable"},
		{"another label and values", `{"label":"state","blockedValues":["draining","warming"]}`,
			[]map[string]string{{"state": "draining"}, {"state": "serving"}, {"state": "warming"}, no}, []int{1, 3},
			`2 of 4 schedulable (2 with state in ["draining" "warming"])`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			if err := f.Configure([]byte(tt.params)); err != nil {
				t.Fatal(err)
			}
			v, err := f.Filter(context.Background(), cycleOf(tt.labels...))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Kept, tt.kept) || v.Reason != tt.reason {
				t.Errorf("kept %v %q, want %v %q", v.Kept, v.Reason, tt.kept, tt.reason)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	f := New()
	for _, c := range []struct{ params, names string }{
		{`{"label":""}`, `"label"`},
		{`{"label":"a b"}`, `"label"`},
		{`{"blockedValues":[]}`, `"blockedValues"`},
		{`{"blockedValues":"false"}`, `"blockedValues"`},
		{`{"labels":"x"}`, `"labels"`},
	} {
		if err := f.Configure([]byte(c.params)); err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: %v, want an error naming %s", c.params, err, c.names)
		}
	}
	// A rejected configuration leaves the one in force: the default still blocks "false".
	if v, _ := f.Filter(context.Background(), cycleOf(map[string]string{"foresight.io/schedulable": "false"})); len(v.Kept) != 0 {
		t.Errorf("after rejected parameters kept %v, want the defaults in force", v.Kept)
	}
	if _, err := f.Filter(context.Background(), nil); err == nil {
		t.Error("nil cycle: want an error")
	}
}
