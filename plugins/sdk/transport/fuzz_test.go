package transport

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
)

// Fuzz targets for the two halves of the cycle's wire form: the host's CycleToProto and the plugin
// side's decoding (sdk's cycleFromProto, which package sdk lends this package as
// hooks.DecodeCycle), and the host's decoding of stage answers (predictionsFromProto,
// indicesFromProto).

// maxFuzzEndpoints bounds the endpoint count of a fuzzed wire cycle. A cycle whose columns are all
// empty may claim any count up to 2^32-1 in 6 bytes, and the plugin side then allocates that many
// endpoints (hundreds of GB): a memory bound, not a property these targets check.
const maxFuzzEndpoints = 1 << 12

// cycleSeeds are wire cycles: the full test cycle, partial projections of it, and invalid ones.
func cycleSeeds(f *testing.F) [][]byte {
	full := CycleToProto(testCycle("r1"))
	withPreds := testCycle("r2")
	withPreds.Endpoints[0].Prediction = sdk.Prediction{Valid: true, TTFTMs: 120, TPOTMs: 15}
	withPreds.Endpoints[0].Prediction.TTFTAfterMs, withPreds.Endpoints[0].Prediction.TTFTSpread = 150, 0.4
	withPreds.Endpoints[1].Prediction = sdk.Prediction{TTFTMs: 7} // invalid: its numbers mean nothing
	idsOnly := proto.Clone(full).(*pb.Cycle)
	idsOnly.Endpoints = &pb.Endpoints{Ids: full.GetEndpoints().GetIds()}
	countOnly := proto.Clone(full).(*pb.Cycle)
	countOnly.Endpoints = &pb.Endpoints{Count: 3}
	short := proto.Clone(full).(*pb.Cycle)
	short.Endpoints.States.Waiting = short.Endpoints.States.Waiting[:1]
	long := proto.Clone(full).(*pb.Cycle)
	long.Endpoints.Predictions = &pb.Predictions{TtftMs: []float64{1, 2, 3, 4}}
	oddTime := proto.Clone(full).(*pb.Cycle)
	oddTime.Now.Nanos = -1
	var out [][]byte
	for _, m := range []*pb.Cycle{full, CycleToProto(withPreds), CycleToProto(&sdk.Cycle{}), idsOnly, countOnly, short, long, oddTime, {}} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzCycleFromProto decodes arbitrary bytes as a wire cycle, as the plugin side does. Decoding
// fails exactly when a column's length is neither 0 nor the endpoint count (count, else the
// number of ids), with an invalid-argument *sdk.StatusError, never a panic. A decoded cycle has
// that many endpoints, each entry of each column where the wire had it and zero where the column
// was empty, and the request, time and seed as sent; encoded again with CycleToProto, marshalled
// and decoded, it is the same cycle (a prediction's numbers aside when it is not valid: stages
// ignore them).
func FuzzCycleFromProto(f *testing.F) {
	for _, s := range cycleSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p pb.Cycle
		if proto.Unmarshal(data, &p) != nil {
			return
		}
		eps := p.GetEndpoints()
		if eps.GetCount() > maxFuzzEndpoints {
			return
		}
		n := int(eps.GetCount())
		if n == 0 {
			n = len(eps.GetIds())
		}
		c, err := hooks.DecodeCycle(&p)
		if bad := badColumn(&p, n); bad != "" || err != nil {
			var se *sdk.StatusError
			if bad == "" || err == nil || !errors.As(err, &se) || se.Code != sdk.CodeInvalidArgument || se.Message == "" {
				t.Fatalf("cycle %v (column %s of the wrong length): decoded with error %v", &p, bad, err)
			}
			return
		}
		checkDecoded(t, &p, n, c)
		again := overTheWire(t, c)
		if diff := cmp.Diff(normalized(c), normalized(again), cycleOpts...); diff != "" {
			t.Fatalf("cycle %v decoded, encoded and decoded again differs (-first +second):\n%s", &p, diff)
		}
	})
}

// badColumn names the first column of p whose length is neither 0 nor n, "" when none is.
func badColumn(p *pb.Cycle, n int) string {
	eps, s, pr := p.GetEndpoints(), p.GetEndpoints().GetStates(), p.GetEndpoints().GetPredictions()
	lens := []struct {
		name string
		n    int
	}{
		{"ids", len(eps.GetIds())}, {"labels", len(eps.GetLabels())},
		{"kv_cache_usage", len(s.GetKvCacheUsage())}, {"waiting", len(s.GetWaiting())}, {"running", len(s.GetRunning())},
		{"inflight_requests", len(s.GetInflightRequests())}, {"prefill_tokens_in_flight", len(s.GetPrefillTokensInFlight())},
		{"decode_tokens_in_flight", len(s.GetDecodeTokensInFlight())}, {"prefix_match", len(s.GetPrefixMatch())},
		{"min_running_tpot_slo_ms", len(s.GetMinRunningTpotSloMs())}, {"metrics_age_ms", len(s.GetMetricsAgeMs())},
		{"last_output_age_ms", len(s.GetLastOutputAgeMs())}, {"dispatched_since_scrape", len(s.GetDispatchedSinceScrape())},
		{"first_token_rate", len(s.GetFirstTokenRate())},
		{"predictions.valid", len(pr.GetValid())}, {"predictions.ttft_ms", len(pr.GetTtftMs())}, {"predictions.tpot_ms", len(pr.GetTpotMs())},
		{"predictions.ttft_after_ms", len(pr.GetTtftAfterMs())}, {"predictions.tpot_after_ms", len(pr.GetTpotAfterMs())},
		{"predictions.ttft_spread", len(pr.GetTtftSpread())}, {"predictions.tpot_spread", len(pr.GetTpotSpread())},
	}
	for _, l := range lens {
		if l.n != 0 && l.n != n {
			return l.name
		}
	}
	return ""
}

// at returns col[i], or zero when col is empty (a column not sent).
func at[T any](col []T, i int) T {
	if len(col) == 0 {
		var zero T
		return zero
	}
	return col[i]
}

// checkDecoded checks c, decoded from p, entry by entry against p.
func checkDecoded(t *testing.T, p *pb.Cycle, n int, c *sdk.Cycle) {
	t.Helper()
	eps, s, pr := p.GetEndpoints(), p.GetEndpoints().GetStates(), p.GetEndpoints().GetPredictions()
	if len(c.Endpoints) != n {
		t.Fatalf("cycle %v: %d endpoints, want %d", p, len(c.Endpoints), n)
	}
	for i, e := range c.Endpoints {
		want := sdk.Endpoint{
			ID:     at(eps.GetIds(), i),
			Labels: at(eps.GetLabels(), i).GetValues(),
			State: sdk.EndpointState{
				KVCacheUsage: at(s.GetKvCacheUsage(), i), Waiting: at(s.GetWaiting(), i), Running: at(s.GetRunning(), i),
				InflightRequests: at(s.GetInflightRequests(), i), PrefillTokensInFlight: at(s.GetPrefillTokensInFlight(), i),
				DecodeTokensInFlight: at(s.GetDecodeTokensInFlight(), i), PrefixMatch: at(s.GetPrefixMatch(), i),
				MinRunningTPOTSLOMs: at(s.GetMinRunningTpotSloMs(), i), MetricsAgeMs: at(s.GetMetricsAgeMs(), i),
				LastOutputAgeMs: at(s.GetLastOutputAgeMs(), i), DispatchedSinceScrape: at(s.GetDispatchedSinceScrape(), i),
				FirstTokenRate: at(s.GetFirstTokenRate(), i),
			},
			Prediction: sdk.Prediction{Valid: at(pr.GetValid(), i), TTFTMs: at(pr.GetTtftMs(), i), TPOTMs: at(pr.GetTpotMs(), i),
				TTFTAfterMs: at(pr.GetTtftAfterMs(), i), TPOTAfterMs: at(pr.GetTpotAfterMs(), i),
				TTFTSpread: at(pr.GetTtftSpread(), i), TPOTSpread: at(pr.GetTpotSpread(), i)},
		}
		if diff := cmp.Diff(want, e, cmpopts.EquateEmpty(), cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("cycle %v: endpoint %d (-wire +decoded):\n%s", p, i, diff)
		}
	}
	r := p.GetRequest()
	want := sdk.Request{ID: r.GetId(), Model: r.GetModel(), InputTokens: r.GetInputTokens(), MaxOutputTokens: r.GetMaxOutputTokens(),
		Streaming: r.GetStreaming(), SLO: sdk.SLO{TTFTMs: r.GetSlo().GetTtftMs(), TPOTMs: r.GetSlo().GetTpotMs()},
		Priority: r.GetPriority(), SessionID: r.GetSessionId(), PrefixBlockHashes: r.GetPrefixBlockHashes(), Labels: r.GetLabels(),
		Disaggregation: sdk.Disaggregation{Hop: sdk.Hop(r.GetDisaggregation().GetHop()), DecodeEndpoint: r.GetDisaggregation().GetDecodeEndpoint(),
			DecodeTTFTMs: r.GetDisaggregation().GetDecodeTtftMs(), DecodeTPOTMs: r.GetDisaggregation().GetDecodeTpotMs()}}
	if diff := cmp.Diff(want, c.Request, cmpopts.EquateEmpty(), cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("cycle %v: request (-wire +decoded):\n%s", p, diff)
	}
	var excluded []sdk.ExcludedEndpoint
	for _, x := range eps.GetExcluded() {
		excluded = append(excluded, sdk.ExcludedEndpoint{ID: x.GetId(), Labels: x.GetLabels(), Reason: x.GetReason()})
	}
	if diff := cmp.Diff(excluded, c.Excluded, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("cycle %v: excluded endpoints (-wire +decoded):\n%s", p, diff)
	}
	if c.Seed != p.GetSeed() || p.GetNow() == nil && !c.Now.IsZero() || p.GetNow() != nil && !c.Now.Equal(p.GetNow().AsTime()) {
		t.Fatalf("cycle %v: seed %d, now %v", p, c.Seed, c.Now)
	}
}

// overTheWire sends c over the wire: CycleToProto, marshal, unmarshal, the plugin side's decoding.
func overTheWire(t *testing.T, c *sdk.Cycle) *sdk.Cycle {
	t.Helper()
	b, err := proto.Marshal(CycleToProto(c))
	if err != nil {
		t.Fatalf("marshalling %+v: %v", c, err)
	}
	var p pb.Cycle
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatalf("unmarshalling the encoding of %+v: %v", c, err)
	}
	out, err := hooks.DecodeCycle(&p)
	if err != nil {
		t.Fatalf("decoding the encoding of %+v: %v", c, err)
	}
	return out
}

// cycleOpts compare cycles as stages see them: nil and empty alike, NaN equal to NaN, times as
// instants, the host's cached encoding ignored.
var cycleOpts = []cmp.Option{
	cmpopts.EquateEmpty(), cmpopts.EquateNaNs(), cmpopts.IgnoreUnexported(sdk.Cycle{}),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
}

// normalized returns a copy of c with the numbers of predictions that are not valid zeroed:
// stages ignore them, and the wire drops them when no prediction is valid.
func normalized(c *sdk.Cycle) *sdk.Cycle {
	n := *c
	n.Endpoints = slices.Clone(c.Endpoints)
	for i := range n.Endpoints {
		if !n.Endpoints[i].Prediction.Valid {
			n.Endpoints[i].Prediction = sdk.Prediction{}
		}
	}
	return &n
}

// FuzzCycleRoundTrip builds a cycle from fuzzed wire bytes (decoded as the plugin side does) with
// fuzzed strings in the places the host fills from request headers and config (request id,
// session, an endpoint's id and label), and checks the host's encoding of it. proto.Marshal
// fails exactly when one of its strings is not UTF-8 (protobuf strings must be; the SDK does not
// check); otherwise the plugin side decodes the same cycle (predictions that are not valid aside),
// and ProjectCycle with any set of read paths gives that cycle with every field outside those
// paths zero (no paths: all of it; the count, time and seed always), the numbers of predictions
// that are not valid aside (the wire carries them when another endpoint's prediction is valid;
// stages ignore them).
func FuzzCycleRoundTrip(f *testing.F) {
	for i, s := range cycleSeeds(f) {
		f.Add(s, "req-1", "conv-1", "10.0.0.1:8000", "gpu", uint32(i*0x2345))
	}
	f.Add([]byte{}, "r\xff", "", "", "", uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, id, session, endpointID, label string, reads uint32) {
		var p pb.Cycle
		if proto.Unmarshal(data, &p) != nil || p.GetEndpoints().GetCount() > maxFuzzEndpoints {
			return
		}
		c, err := hooks.DecodeCycle(&p)
		if err != nil {
			return // FuzzCycleFromProto's
		}
		c.Request.ID, c.Request.SessionID = id, session
		if len(c.Endpoints) > 0 {
			c.Endpoints[0].ID = endpointID
			c.Endpoints[0].Labels = map[string]string{"accelerator": label}
		}
		valid := utf8.ValidString(id) && utf8.ValidString(session) &&
			(len(c.Endpoints) == 0 || utf8.ValidString(endpointID) && utf8.ValidString(label)) // no endpoint: they are not sent
		if _, err := proto.Marshal(CycleToProto(c)); (err == nil) != valid {
			t.Fatalf("marshalling a cycle with strings %q, %q, %q, %q: %v", id, session, endpointID, label, err)
		}
		if !valid {
			return
		}
		if diff := cmp.Diff(normalized(c), normalized(overTheWire(t, c)), cycleOpts...); diff != "" {
			t.Fatalf("cycle over the wire (-sent +received):\n%s", diff)
		}
		paths := ReadPaths()
		var declared []string
		for i, path := range paths {
			if reads&(1<<i) != 0 {
				declared = append(declared, path)
			}
		}
		got, err := ProjectCycle(c, declared)
		if err != nil {
			t.Fatalf("ProjectCycle(%v): %v", declared, err)
		}
		if diff := cmp.Diff(project(c, declared), normalized(got), cycleOpts...); diff != "" {
			t.Fatalf("ProjectCycle(%v) (-declared fields +received):\n%s", declared, diff)
		}
	})
}

// stateColumns zero one column of EndpointState each, by its read path's last element.
var stateColumns = map[string]func(*sdk.EndpointState){
	"kv_cache_usage":           func(s *sdk.EndpointState) { s.KVCacheUsage = 0 },
	"waiting":                  func(s *sdk.EndpointState) { s.Waiting = 0 },
	"running":                  func(s *sdk.EndpointState) { s.Running = 0 },
	"inflight_requests":        func(s *sdk.EndpointState) { s.InflightRequests = 0 },
	"prefill_tokens_in_flight": func(s *sdk.EndpointState) { s.PrefillTokensInFlight = 0 },
	"decode_tokens_in_flight":  func(s *sdk.EndpointState) { s.DecodeTokensInFlight = 0 },
	"prefix_match":             func(s *sdk.EndpointState) { s.PrefixMatch = 0 },
	"min_running_tpot_slo_ms":  func(s *sdk.EndpointState) { s.MinRunningTPOTSLOMs = 0 },
	"metrics_age_ms":           func(s *sdk.EndpointState) { s.MetricsAgeMs = 0 },
	"last_output_age_ms":       func(s *sdk.EndpointState) { s.LastOutputAgeMs = 0 },
	"dispatched_since_scrape":  func(s *sdk.EndpointState) { s.DispatchedSinceScrape = 0 },
	"first_token_rate":         func(s *sdk.EndpointState) { s.FirstTokenRate = 0 },
}

// project returns c as ReadPaths documents a stage declaring reads sees it: the fields outside
// reads zero (none of them when reads is empty), the endpoint count, time and seed always there,
// predictions that are not valid without their numbers.
func project(c *sdk.Cycle, reads []string) *sdk.Cycle {
	out := normalized(c)
	if len(reads) == 0 {
		return out
	}
	has := func(path string) bool { return slices.Contains(reads, path) }
	hashes := out.Request.PrefixBlockHashes
	if !has("request") {
		out.Request = sdk.Request{}
	}
	out.Request.PrefixBlockHashes = nil
	if has("request.prefix_block_hashes") {
		out.Request.PrefixBlockHashes = hashes
	}
	if !has("endpoints.excluded") {
		out.Excluded = nil
	}
	out.Endpoints = make([]sdk.Endpoint, len(c.Endpoints))
	for i, e := range normalized(c).Endpoints {
		o := &out.Endpoints[i]
		if has("endpoints.ids") {
			o.ID = e.ID
		}
		if has("endpoints.labels") {
			o.Labels = e.Labels
		}
		if has("endpoints.predictions") {
			o.Prediction = e.Prediction
		}
		o.State = e.State
		if !has("endpoints.states") {
			for name, zero := range stateColumns {
				if !has("endpoints.states." + name) {
					zero(&o.State)
				}
			}
		}
	}
	return out
}

// FuzzPredictionsFromProto decodes a producer's columnar answer for n endpoints: an
// invalid-argument *sdk.StatusError exactly when a column's length is neither 0 nor n, else n
// predictions holding the columns' entries (zero for a column not sent).
func FuzzPredictionsFromProto(f *testing.F) {
	for _, p := range []*pb.Predictions{
		{Valid: []bool{true, false, true}, TtftMs: []float64{100, 0, math.Inf(1)}, TpotMs: []float64{10, 0, 20}},
		{TtftMs: []float64{1, 2, 3}}, {Valid: []bool{true}}, {Valid: []bool{true, true, true, true}}, {},
		{Valid: []bool{true, true, true}, TtftMs: []float64{1, 2, 3}, TtftAfterMs: []float64{2, 0, 4}, TtftSpread: []float64{0.3, 0, 0.5}},
		{Valid: []bool{true, true, true}, TpotSpread: []float64{0.2}},
	} {
		b, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, count uint16) {
		var p pb.Predictions
		if proto.Unmarshal(data, &p) != nil {
			return
		}
		n := int(count % 1024)
		preds, err := predictionsFromProto(&p, n)
		bad := false
		for _, l := range []int{len(p.GetValid()), len(p.GetTtftMs()), len(p.GetTpotMs()), len(p.GetTtftAfterMs()),
			len(p.GetTpotAfterMs()), len(p.GetTtftSpread()), len(p.GetTpotSpread())} {
			bad = bad || l != 0 && l != n
		}
		if bad || err != nil {
			var se *sdk.StatusError
			if !bad || !errors.As(err, &se) || se.Code != sdk.CodeInvalidArgument || preds != nil {
				t.Fatalf("predictions %v for %d endpoints: %v, %v", &p, n, preds, err)
			}
			return
		}
		if len(preds) != n {
			t.Fatalf("predictions %v for %d endpoints: %d", &p, n, len(preds))
		}
		for i, pr := range preds {
			want := sdk.Prediction{Valid: at(p.GetValid(), i), TTFTMs: at(p.GetTtftMs(), i), TPOTMs: at(p.GetTpotMs(), i),
				TTFTAfterMs: at(p.GetTtftAfterMs(), i), TPOTAfterMs: at(p.GetTpotAfterMs(), i),
				TTFTSpread: at(p.GetTtftSpread(), i), TPOTSpread: at(p.GetTpotSpread(), i)}
			if diff := cmp.Diff(want, pr, cmpopts.EquateNaNs()); diff != "" {
				t.Fatalf("predictions %v: entry %d (-wire +decoded):\n%s", &p, i, diff)
			}
		}
	})
}

// FuzzIndicesFromProto converts a stage's endpoint indices (little-endian uint32s) for a cycle of n
// endpoints: an error exactly when one is outside [0, n), else the same indices as ints.
func FuzzIndicesFromProto(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 0, 0, 0}, uint16(3))
	f.Add([]byte{3, 0, 0, 0}, uint16(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(3))
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{0, 0, 0, 0}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, count uint16) {
		idx := make([]uint32, len(data)/4)
		for i := range idx {
			idx[i] = binary.LittleEndian.Uint32(data[4*i:])
		}
		n := int(count)
		out, err := indicesFromProto(idx, n)
		bad := slices.ContainsFunc(idx, func(v uint32) bool { return int64(v) >= int64(n) })
		if (err != nil) != bad {
			t.Fatalf("indices %v for %d endpoints: error %v", idx, n, err)
		}
		if err != nil {
			return
		}
		if len(out) != len(idx) {
			t.Fatalf("indices %v: %v", idx, out)
		}
		for i, v := range out {
			if v != int(idx[i]) || v < 0 || v >= n {
				t.Fatalf("indices %v for %d endpoints: %v", idx, n, out)
			}
		}
	})
}
