package bench

import (
	"context"
	"testing"
	"time"
)

func TestBenchProxySmall(t *testing.T) {
	res, err := RunProxy(context.Background(), ProxyOptions{Config: "../examples/load-prefix-322.yaml",
		Streams: "1,4", Servers: 2, Requests: 8, MaxTokens: 2, RPSWorkers: 4, RPSFor: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c1", "c4"} {
		d, r := res.DirectUs[k], res.RoutedUs[k]
		if res.Errors[k] != 0 || d.P50 <= 0 || r.P50 <= 0 || d.P99 < d.P50 || r.P99 < r.P50 {
			t.Errorf("%s: direct %+v, routed %+v, errors %d", k, d, r, res.Errors[k])
		}
		if a := res.AddedTTFTUs[k]; a.P50 != r.P50-d.P50 || a.P99 != r.P99-d.P99 {
			t.Errorf("%s: added %+v is not routed − direct", k, a)
		}
	}
	if res.MaxRPS <= 0 {
		t.Errorf("max_rps %v", res.MaxRPS)
	}
	if _, err := parseLevels("1,x"); err == nil {
		t.Error("--streams 1,x accepted")
	}
}
