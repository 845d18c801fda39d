package sdk

import (
	"math"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
)

// Conversions between the wire form and the sdk types in the directions the plugin side needs:
// what it receives (cycles, samples) from the wire, what it answers (predictions, info, stats,
// indices) to it. The host's directions are in package transport. The cycle travels in columnar
// form (see Endpoints in types.proto); everything else maps field by field.

// cycleFromProto returns the sdk form of p, or an error when a column's length does not match the ids.
func cycleFromProto(p *pb.Cycle) (*Cycle, error) {
	c := &Cycle{Request: requestFromProto(p.GetRequest()), Seed: p.GetSeed(),
		Round: Round{Position: int(p.GetRound().GetPosition()), Size: int(p.GetRound().GetSize())}}
	if p.GetNow() != nil {
		c.Now = p.GetNow().AsTime()
	}
	eps := p.GetEndpoints()
	n := int(eps.GetCount())
	if n == 0 {
		n = len(eps.GetIds())
	}
	s := eps.GetStates()
	cols := wire.Columns{N: n}
	ids := wire.Column(&cols, "ids", eps.GetIds())
	kv := wire.Column(&cols, "kv_cache_usage", s.GetKvCacheUsage())
	waiting := wire.Column(&cols, "waiting", s.GetWaiting())
	running := wire.Column(&cols, "running", s.GetRunning())
	inflight := wire.Column(&cols, "inflight_requests", s.GetInflightRequests())
	prefill := wire.Column(&cols, "prefill_tokens_in_flight", s.GetPrefillTokensInFlight())
	decode := wire.Column(&cols, "decode_tokens_in_flight", s.GetDecodeTokensInFlight())
	prefix := wire.Column(&cols, "prefix_match", s.GetPrefixMatch())
	minTPOT := wire.Column(&cols, "min_running_tpot_slo_ms", s.GetMinRunningTpotSloMs())
	age := wire.Column(&cols, "metrics_age_ms", s.GetMetricsAgeMs())
	outputAge := wire.Column(&cols, "last_output_age_ms", s.GetLastOutputAgeMs())
	sinceScrape := wire.Column(&cols, "dispatched_since_scrape", s.GetDispatchedSinceScrape())
	startRate := wire.Column(&cols, "first_token_rate", s.GetFirstTokenRate())
	runningTPOT := wire.Column(&cols, "running_tpot_ms", s.GetRunningTpotMs())
	pr := eps.GetPredictions()
	valid := wire.Column(&cols, "predictions.valid", pr.GetValid())
	ttft := wire.Column(&cols, "predictions.ttft_ms", pr.GetTtftMs())
	tpot := wire.Column(&cols, "predictions.tpot_ms", pr.GetTpotMs())
	ttftAfter := wire.Column(&cols, "predictions.ttft_after_ms", pr.GetTtftAfterMs())
	tpotAfter := wire.Column(&cols, "predictions.tpot_after_ms", pr.GetTpotAfterMs())
	ttftSpread := wire.Column(&cols, "predictions.ttft_spread", pr.GetTtftSpread())
	tpotSpread := wire.Column(&cols, "predictions.tpot_spread", pr.GetTpotSpread())
	labels := wire.Column(&cols, "labels", eps.GetLabels())
	if cols.Err != nil {
		return nil, &StatusError{Code: CodeInvalidArgument, Message: cols.Err.Error()}
	}
	c.Endpoints = make([]Endpoint, n)
	for i := range c.Endpoints {
		c.Endpoints[i] = Endpoint{
			ID: ids(i),
			State: EndpointState{
				KVCacheUsage:          kv(i),
				Waiting:               waiting(i),
				Running:               running(i),
				InflightRequests:      inflight(i),
				PrefillTokensInFlight: prefill(i),
				DecodeTokensInFlight:  decode(i),
				PrefixMatch:           prefix(i),
				MinRunningTPOTSLOMs:   minTPOT(i),
				MetricsAgeMs:          age(i),
				LastOutputAgeMs:       outputAge(i),
				DispatchedSinceScrape: sinceScrape(i),
				FirstTokenRate:        startRate(i),
				RunningTPOTMs:         runningTPOT(i),
			},
			Prediction: Prediction{Valid: valid(i), TTFTMs: ttft(i), TPOTMs: tpot(i), TTFTAfterMs: ttftAfter(i), TPOTAfterMs: tpotAfter(i),
				TTFTSpread: ttftSpread(i), TPOTSpread: tpotSpread(i)},
		}
		if l := labels(i); l != nil {
			c.Endpoints[i].Labels = l.GetValues()
		}
	}
	if x := eps.GetExcluded(); len(x) > 0 {
		c.Excluded = make([]ExcludedEndpoint, len(x))
		for i, e := range x {
			c.Excluded[i] = ExcludedEndpoint{ID: e.GetId(), Labels: e.GetLabels(), Reason: e.GetReason()}
		}
	}
	return c, nil
}

// predictionsToProto returns the columnar wire form of a producer's predictions.
func predictionsToProto(preds []Prediction) *pb.Predictions {
	p := &pb.Predictions{
		Valid:  make([]bool, len(preds)),
		TtftMs: make([]float64, len(preds)),
		TpotMs: make([]float64, len(preds)),
	}
	for i, pr := range preds {
		p.Valid[i], p.TtftMs[i], p.TpotMs[i] = pr.Valid, pr.TTFTMs, pr.TPOTMs
	}
	n := len(preds)
	p.TtftAfterMs = wire.OptionalColumn(n, func(i int) float64 { return preds[i].TTFTAfterMs })
	p.TpotAfterMs = wire.OptionalColumn(n, func(i int) float64 { return preds[i].TPOTAfterMs })
	p.TtftSpread = wire.OptionalColumn(n, func(i int) float64 { return preds[i].TTFTSpread })
	p.TpotSpread = wire.OptionalColumn(n, func(i int) float64 { return preds[i].TPOTSpread })
	return p
}

// requestFromProto returns the sdk form of p (nil reads as the zero request).
func requestFromProto(p *pb.Request) Request {
	return Request{
		ID:                p.GetId(),
		Model:             p.GetModel(),
		InputTokens:       p.GetInputTokens(),
		MaxOutputTokens:   p.GetMaxOutputTokens(),
		Streaming:         p.GetStreaming(),
		SLO:               SLO{TTFTMs: p.GetSlo().GetTtftMs(), TPOTMs: p.GetSlo().GetTpotMs()},
		Priority:          p.GetPriority(),
		SessionID:         p.GetSessionId(),
		PrefixBlockHashes: p.GetPrefixBlockHashes(),
		Labels:            p.GetLabels(),
		Disaggregation:    disaggregationFromProto(p.GetDisaggregation()),
	}
}

// disaggregationFromProto returns the sdk form of p (nil reads as a request served whole).
func disaggregationFromProto(p *pb.Disaggregation) Disaggregation {
	return Disaggregation{Hop: Hop(p.GetHop()), DecodeEndpoint: p.GetDecodeEndpoint(), DecodeTTFTMs: p.GetDecodeTtftMs(), DecodeTPOTMs: p.GetDecodeTpotMs()}
}

// sampleFromProto returns the sdk form of p.
func sampleFromProto(p *pb.Sample) Sample {
	st := p.GetState()
	s := Sample{
		Request:    requestFromProto(p.GetRequest()),
		EndpointID: p.GetEndpointId(),
		State: EndpointState{
			KVCacheUsage:          st.GetKvCacheUsage(),
			Waiting:               st.GetWaiting(),
			Running:               st.GetRunning(),
			InflightRequests:      st.GetInflightRequests(),
			PrefillTokensInFlight: st.GetPrefillTokensInFlight(),
			DecodeTokensInFlight:  st.GetDecodeTokensInFlight(),
			PrefixMatch:           st.GetPrefixMatch(),
			MinRunningTPOTSLOMs:   st.GetMinRunningTpotSloMs(),
			MetricsAgeMs:          st.GetMetricsAgeMs(),
			LastOutputAgeMs:       st.GetLastOutputAgeMs(),
			DispatchedSinceScrape: st.GetDispatchedSinceScrape(),
			FirstTokenRate:        st.GetFirstTokenRate(),
			RunningTPOTMs:         st.GetRunningTpotMs(),
		},
		Predicted: Prediction{
			Valid:  p.GetPredicted().GetValid(),
			TTFTMs: p.GetPredicted().GetTtftMs(),
			TPOTMs: p.GetPredicted().GetTpotMs(),
		},
		ActualTTFTMs: p.GetActualTtftMs(),
		ActualTPOTMs: p.GetActualTpotMs(),
		OutputTokens: p.GetOutputTokens(),
	}
	if p.GetDispatchedAt() != nil {
		s.DispatchedAt = p.GetDispatchedAt().AsTime()
	}
	return s
}

// infoToProto returns the wire form of i.
func infoToProto(i Info) *pb.GetInfoResponse {
	return &pb.GetInfoResponse{Type: i.Type, Stage: pb.Stage(i.Stage), Version: i.Version, Description: i.Description, Reads: i.Reads,
		MultiInstance: i.MultiInstance, Rounds: i.Rounds}
}

func indicesToProto(idx []int) []uint32 {
	out := make([]uint32, len(idx))
	for i, v := range idx {
		out[i] = uint32(v)
	}
	return out
}

// roomToProto converts a detector's room counts into [0, 2^31 − 1], the range the host reads: a
// negative count (a stage's slip) becomes 0, full, and a larger one than the host reads is capped
// rather than wrapped.
func countsToProto(counts []int) []uint32 {
	if len(counts) == 0 {
		return nil
	}
	out := make([]uint32, len(counts))
	for i, v := range counts {
		out[i] = uint32(min(max(v, 0), math.MaxInt32))
	}
	return out
}

// orderKeyToProto converts k; a zero HopelessAfter stays absent.
func orderKeyToProto(k OrderKey) *pb.OrderResult {
	r := &pb.OrderResult{Rank: k.Rank, Flow: k.Flow}
	if !k.HopelessAfter.IsZero() {
		r.HopelessAfter = timestamppb.New(k.HopelessAfter)
	}
	return r
}

// predictorStatsToProto converts stats (nil stays nil).
func predictorStatsToProto(s *PredictorStats) *pb.PredictorStats {
	if s == nil {
		return nil
	}
	target := func(t *TargetStats) *pb.TargetStats {
		return &pb.TargetStats{Samples: t.Samples, Mape: t.MAPE, Mae: t.MAE, QuantileCoverage: t.QuantileCoverage}
	}
	return &pb.PredictorStats{ModelVersion: s.ModelVersion, TrainingRows: s.TrainingRows,
		Ttft: target(&s.TTFT), Tpot: target(&s.TPOT), Drift: s.Drift}
}
