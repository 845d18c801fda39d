package cluster

import (
	"strconv"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/flowcontrol"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

// slotFleet is n servers of 32 slots each: a burst beyond 32 × n requests must queue somewhere.
func slotFleet(t *testing.T, n int) Config { return fleetOf(t, "sim-8b-h100-32slots", n) }

// burstOf is n requests arriving 1 ms apart; every third is critical (priority 1, TTFT objective
// 2 s), the others sheddable (priority -1), two tenants alternating.
func burstOf(n int) []workload.Request {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		r := &reqs[i]
		*r = workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 256, OutputTokens: 64,
			Streaming: true, Priority: -1, Class: "tenant-" + strconv.Itoa(i%2)}
		if i%3 == 0 {
			r.Priority, r.SLO.TTFTMs = 1, 2000
		}
	}
	return reqs
}

func flowControl(ttl time.Duration, maxRequests int) *FlowControl {
	return &FlowControl{
		Queue:  flowcontrol.Config{Default: flowcontrol.Limits{MaxRequests: maxRequests, MaxBytes: 1 << 30, TTL: ttl}},
		Stages: pipeline.NewFlowBuiltins(config.FlowControl{Policy: flowpolicy.PolicyEDF}, zerolog.Nop()),
		Flow:   func(r *workload.Request) string { return r.Class },
	}
}

// A burst of 300 requests on two 32-slot servers: with flow control the requests beyond what
// the servers can start wait in the router, and critical ones go first, so the critical class's
// TTFT is far below the sheddable one's; every request is served, none lost.
func TestFlowControlServesCriticalFirst(t *testing.T) {
	reqs := burstOf(300)
	cfg := slotFleet(t, 2)
	cfg.FlowControl = flowControl(time.Minute, 1000)
	res, err := Run(cfg, reqs, examplePipeline(t, "least-load.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var held int
	var critical, sheddable []time.Duration
	for i, o := range res.Outcomes {
		if o.Shed || o.TTFT <= 0 {
			t.Fatalf("request %d not served: %+v", i, o)
		}
		if o.Held {
			held++
			if o.Queued < 0 || o.Queued > o.TTFT {
				t.Errorf("request %d waited %v in the router but its TTFT is %v", i, o.Queued, o.TTFT)
			}
		}
		if reqs[i].Priority > 0 {
			critical = append(critical, o.TTFT)
		} else {
			sheddable = append(sheddable, o.TTFT)
		}
	}
	if held < 100 {
		t.Errorf("%d of 300 requests waited in the router; a burst over 64 slots should hold most", held)
	}
	if mc, ms := mean(critical), mean(sheddable); mc*2 > ms {
		t.Errorf("critical mean TTFT %v is not under half the sheddable one's %v", mc, ms)
	}
	// Without flow control the same burst queues in the servers, first come first served.
	cfg.FlowControl = nil
	plain, err := Run(cfg, reqs, examplePipeline(t, "least-load.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var plainCritical []time.Duration
	for i, o := range plain.Outcomes {
		if reqs[i].Priority > 0 {
			plainCritical = append(plainCritical, o.TTFT)
		}
	}
	if mean(critical) >= mean(plainCritical) {
		t.Errorf("critical mean TTFT with flow control %v, without %v: no better", mean(critical), mean(plainCritical))
	}
}

// A TTL shorter than the burst takes to drain sheds the requests still waiting, each with its
// reason, and a band full at arrival refuses at once; the others are served.
func TestFlowControlShedsWithReasons(t *testing.T) {
	reqs := burstOf(300)
	cfg := slotFleet(t, 1)
	cfg.FlowControl = flowControl(500*time.Millisecond, 150)
	res, err := Run(cfg, reqs, examplePipeline(t, "least-load.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for i, o := range res.Outcomes {
		switch {
		case o.Shed:
			reasons[o.ShedReason]++
			if !o.Held {
				t.Errorf("request %d shed by flow control without being held", i)
			}
		case o.TTFT <= 0:
			t.Errorf("request %d neither served nor shed", i)
		}
		if o.ShedReason == "ttl-expired" && o.Queued != 500*time.Millisecond {
			// Expiry is an event of the simulation: it sheds at the TTL exactly.
			t.Errorf("request %d expired after %v, want 500ms", i, o.Queued)
		}
	}
	if reasons["ttl-expired"] == 0 || reasons["band-full"] == 0 {
		t.Errorf("shed reasons %v: want both ttl-expired and band-full", reasons)
	}
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(len(ds), 1))
}
