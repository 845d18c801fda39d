package failover

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

const zone = "topology.kubernetes.io/zone"

// in returns the labels of an endpoint in zone z ("": no label).
func in(z string) map[string]string {
	if z == "" {
		return nil
	}
	return map[string]string{zone: z}
}

// out returns an endpoint excluded from the cycle for reason, in zone z.
func out(z, reason string) sdk.ExcludedEndpoint {
	return sdk.ExcludedEndpoint{ID: "x-" + z, Labels: in(z), Reason: reason}
}

func TestFailingDomainsAreBlocked(t *testing.T) {
	const unhealthy, ejected = sdk.ExcludedUnhealthy, sdk.ExcludedEjected
	tests := []struct {
		name     string
		params   string
		zones    []string // the candidates' zones, endpoints 0, 1, …
		excluded []sdk.ExcludedEndpoint
		kept     []int
		reason   string
	}{
		{"nothing excluded keeps all", "", []string{"a", "b"}, nil, []int{0, 1}, "no failing domain"},
		{"an unhealthy member blocks its zone; no zone is never blocked",
			"", []string{"a", "b", "a", "", "c"}, []sdk.ExcludedEndpoint{out("a", unhealthy)},
			[]int{1, 3, 4}, "3 of 5 outside the failing domains (topology.kubernetes.io/zone a)"},
		{"an ejected member blocks too; two zones, each named once, sorted",
			"", []string{"a", "b", "c"}, []sdk.ExcludedEndpoint{out("c", ejected), out("a", unhealthy), out("c", unhealthy)},
			[]int{1}, "1 of 3 outside the failing domains (topology.kubernetes.io/zone a, c)"},
		{"a failing zone without candidates blocks none",
			"", []string{"a", "b"}, []sdk.ExcludedEndpoint{out("z", unhealthy)},
			[]int{0, 1}, "all 2 outside the failing domains (topology.kubernetes.io/zone z)"},
		{"an excluded endpoint without a zone names no domain",
			"", []string{"a", ""}, []sdk.ExcludedEndpoint{out("", unhealthy)}, []int{0, 1}, "no failing domain"},
		{"a reason the filter does not count is no failure",
			"", []string{"a"}, []sdk.ExcludedEndpoint{out("a", "draining")}, []int{0}, "no failing domain"},
		{"every candidate in a failing zone: all kept",
			"", []string{"a", "b", "a"}, []sdk.ExcludedEndpoint{out("a", unhealthy), out("b", ejected)},
			[]int{0, 1, 2}, "all 3 in failing domains (topology.kubernetes.io/zone a, b): all kept, no healthy domain"},
		{"failureReasons: only unhealthy counts",
			`{"failureReasons":["unhealthy"]}`, []string{"a", "b"}, []sdk.ExcludedEndpoint{out("a", ejected), out("b", unhealthy)},
			[]int{0}, "1 of 2 outside the failing domains (topology.kubernetes.io/zone b)"},
		{"another domain label", `{"domainLabel":"rack"}`, []string{"a", "b"},
			[]sdk.ExcludedEndpoint{{ID: "x", Labels: map[string]string{"rack": "r1", zone: "a"}, Reason: unhealthy}},
			[]int{0, 1}, "all 2 outside the failing domains (rack r1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			if err := f.Configure([]byte(tt.params)); err != nil {
				t.Fatal(err)
			}
			c := &sdk.Cycle{Excluded: tt.excluded}
			for i, z := range tt.zones {
				c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: string(rune('0' + i)), Labels: in(z)})
			}
			v, err := f.Filter(context.Background(), c)
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
		{`{"domainLabel":""}`, `"domainLabel"`},
		{`{"domainLabel":"my zone"}`, `"domainLabel"`},
		{`{"failureReasons":[]}`, `"failureReasons"`},
		{`{"failureReasons":["unhealthy","gone"]}`, `"failureReasons"`},
		{`{"domain":"zone"}`, `"domain"`},
	} {
		if err := f.Configure([]byte(c.params)); err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: %v, want an error naming %s", c.params, err, c.names)
		}
	}
	if _, err := f.Filter(context.Background(), nil); err == nil {
		t.Error("nil cycle: want an error")
	}
}
