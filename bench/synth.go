package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"google.golang.org/protobuf/proto"
)

// synthCycles returns n synthetic cycles over a fleet of endpoints whose state spans idle to
// saturated, with an 8-block shared prefix on a quarter of the fleet. withPredictions fills
// predictions that grow with load, as a producer's would, for configs without a producer.
func synthCycles(n, endpoints int, seed uint64, withPredictions bool) []*sdk.Cycle {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]*sdk.Cycle, n)
	for k := range out {
		c := &sdk.Cycle{
			Request: sdk.Request{
				ID: fmt.Sprintf("bench-%d", k), Model: "meta-llama/Llama-3.1-8B-Instruct",
				InputTokens: 200 + rng.Int64N(3800), MaxOutputTokens: 64 + rng.Int64N(448), Streaming: true,
				SLO:               sdk.SLO{TTFTMs: 800, TPOTMs: 40},
				Priority:          int32(rng.IntN(2)) - 1,
				PrefixBlockHashes: []uint64{11, 12, 13, 14, 15, 16, 17, 18},
			},
			Endpoints: make([]sdk.Endpoint, endpoints),
			Now:       time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).Add(time.Duration(k) * time.Millisecond),
		}
		for i := range c.Endpoints {
			load := rng.Float64()
			st := sdk.EndpointState{
				KVCacheUsage:          load,
				Waiting:               int64(load * load * 12),
				Running:               int64(load * 64),
				InflightRequests:      int64(load * 70),
				PrefillTokensInFlight: int64(load * 8000),
				DecodeTokensInFlight:  int64(load * 20000),
				MetricsAgeMs:          float64(rng.IntN(50)),
			}
			if i%4 == 0 {
				st.PrefixMatch = 0.5 + 0.5*rng.Float64()
			}
			if rng.IntN(3) == 0 {
				st.MinRunningTPOTSLOMs = 30 + float64(rng.IntN(30))
			}
			c.Endpoints[i] = sdk.Endpoint{ID: fmt.Sprintf("10.0.%d.%d:8000", i/256, i%256), State: st}
			if withPredictions {
				ttft, tpot := synthLatency(&st)
				c.Endpoints[i].Prediction = sdk.Prediction{Valid: true,
					TTFTMs: ttft + 50*rng.Float64(), TPOTMs: tpot + 2*rng.Float64()}
			}
		}
		out[k] = c
	}
	return out
}

// synthLatency is the synthetic fleet's latency law: TTFT grows with load, less where the prefix
// is cached; TPOT with load.
func synthLatency(st *sdk.EndpointState) (ttftMs, tpotMs float64) {
	load := st.KVCacheUsage
	return 40 + 1500*load*(1-0.8*st.PrefixMatch), 8 + 40*load
}

// synthSamples returns finished-request samples that follow synthLatency, one per endpoint of
// the cycles, for warming a producer up.
func synthSamples(cycles []*sdk.Cycle, n int) []sdk.Sample {
	out := make([]sdk.Sample, 0, n)
	for k := 0; len(out) < n; k++ {
		c := cycles[k%len(cycles)]
		for i := range c.Endpoints {
			if len(out) == n {
				break
			}
			st := c.Endpoints[i].State
			ttft, tpot := synthLatency(&st)
			r := c.Request
			r.ID = fmt.Sprintf("warm-%d-%d", k, i)
			out = append(out, sdk.Sample{Request: r, EndpointID: c.Endpoints[i].ID, State: st,
				ActualTTFTMs: ttft, ActualTPOTMs: tpot, OutputTokens: r.MaxOutputTokens, DispatchedAt: c.Now})
		}
	}
	return out
}

// payloadSize is the encoded size of one cycle on the wire.
func payloadSize(c *sdk.Cycle) int { return proto.Size(transport.CycleToProto(c)) }
