package transport

import (
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Conversions between the sdk types and the wire form in the directions the host needs: what it
// sends (cycles, samples) to the wire, what it receives (predictions, info, stats, indices,
// statuses) from it. The plugin side's directions are in package sdk. The cycle travels in
// columnar form (see Endpoints in types.proto); everything else maps field by field.

// CycleToProto returns the wire form of c, as a stage that reads everything receives it.
func CycleToProto(c *sdk.Cycle) *pb.Cycle {
	n := len(c.Endpoints)
	eps := &pb.Endpoints{
		Count: uint32(n),
		Ids:   make([]string, n),
		States: &pb.EndpointStates{
			KvCacheUsage:          make([]float64, n),
			Waiting:               make([]int64, n),
			Running:               make([]int64, n),
			InflightRequests:      make([]int64, n),
			PrefillTokensInFlight: make([]int64, n),
			DecodeTokensInFlight:  make([]int64, n),
			PrefixMatch:           make([]float64, n),
			MinRunningTpotSloMs:   make([]float64, n),
			MetricsAgeMs:          make([]float64, n),
			LastOutputAgeMs:       make([]float64, n),
			DispatchedSinceScrape: make([]int64, n),
			FirstTokenRate:        make([]float64, n),
			RunningTpotMs:         make([]float64, n),
		},
	}
	var labels, predictions bool
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		eps.Ids[i] = e.ID
		s, st := eps.States, &e.State
		s.KvCacheUsage[i] = st.KVCacheUsage
		s.Waiting[i] = st.Waiting
		s.Running[i] = st.Running
		s.InflightRequests[i] = st.InflightRequests
		s.PrefillTokensInFlight[i] = st.PrefillTokensInFlight
		s.DecodeTokensInFlight[i] = st.DecodeTokensInFlight
		s.PrefixMatch[i] = st.PrefixMatch
		s.MinRunningTpotSloMs[i] = st.MinRunningTPOTSLOMs
		s.MetricsAgeMs[i] = st.MetricsAgeMs
		s.LastOutputAgeMs[i] = st.LastOutputAgeMs
		s.DispatchedSinceScrape[i] = st.DispatchedSinceScrape
		s.FirstTokenRate[i] = st.FirstTokenRate
		s.RunningTpotMs[i] = st.RunningTPOTMs
		labels = labels || len(e.Labels) > 0
		predictions = predictions || e.Prediction.Valid
	}
	if labels {
		eps.Labels = make([]*pb.Labels, n)
		for i := range c.Endpoints {
			eps.Labels[i] = &pb.Labels{Values: c.Endpoints[i].Labels}
		}
	}
	if predictions {
		eps.Predictions = predictionsToProto(c.Endpoints)
	}
	if len(c.Excluded) > 0 {
		eps.Excluded = make([]*pb.ExcludedEndpoint, len(c.Excluded))
		for i, x := range c.Excluded {
			eps.Excluded[i] = &pb.ExcludedEndpoint{Id: x.ID, Labels: x.Labels, Reason: x.Reason}
		}
	}
	return &pb.Cycle{
		Request:   requestToProto(&c.Request),
		Endpoints: eps,
		Now:       timestamppb.New(c.Now),
		Seed:      c.Seed,
		Round:     roundToProto(c.Round),
	}
}

// roundToProto returns the wire form of r; nil for the zero Round (a cycle decided alone).
func roundToProto(r sdk.Round) *pb.Round {
	if r == (sdk.Round{}) {
		return nil
	}
	return &pb.Round{Position: uint32(max(r.Position, 0)), Size: uint32(max(r.Size, 0))}
}

// sameRound reports whether p is the wire form of r.
func sameRound(p *pb.Round, r sdk.Round) bool {
	return int(p.GetPosition()) == r.Position && int(p.GetSize()) == r.Size
}

// predictionsToProto returns the columnar wire form of the endpoints' predictions.
func predictionsToProto(eps []sdk.Endpoint) *pb.Predictions {
	p := &pb.Predictions{
		Valid:  make([]bool, len(eps)),
		TtftMs: make([]float64, len(eps)),
		TpotMs: make([]float64, len(eps)),
	}
	for i := range eps {
		pr := &eps[i].Prediction
		p.Valid[i], p.TtftMs[i], p.TpotMs[i] = pr.Valid, pr.TTFTMs, pr.TPOTMs
	}
	n := len(eps)
	p.TtftAfterMs = wire.OptionalColumn(n, func(i int) float64 { return eps[i].Prediction.TTFTAfterMs })
	p.TpotAfterMs = wire.OptionalColumn(n, func(i int) float64 { return eps[i].Prediction.TPOTAfterMs })
	p.TtftSpread = wire.OptionalColumn(n, func(i int) float64 { return eps[i].Prediction.TTFTSpread })
	p.TpotSpread = wire.OptionalColumn(n, func(i int) float64 { return eps[i].Prediction.TPOTSpread })
	return p
}

// predictionsFromProto returns n predictions from their columnar wire form (absent columns read as zero).
func predictionsFromProto(p *pb.Predictions, n int) ([]sdk.Prediction, error) {
	cols := wire.Columns{N: n}
	valid := wire.Column(&cols, "predictions.valid", p.GetValid())
	ttft := wire.Column(&cols, "predictions.ttft_ms", p.GetTtftMs())
	tpot := wire.Column(&cols, "predictions.tpot_ms", p.GetTpotMs())
	ttftAfter := wire.Column(&cols, "predictions.ttft_after_ms", p.GetTtftAfterMs())
	tpotAfter := wire.Column(&cols, "predictions.tpot_after_ms", p.GetTpotAfterMs())
	ttftSpread := wire.Column(&cols, "predictions.ttft_spread", p.GetTtftSpread())
	tpotSpread := wire.Column(&cols, "predictions.tpot_spread", p.GetTpotSpread())
	if cols.Err != nil {
		return nil, &sdk.StatusError{Code: sdk.CodeInvalidArgument, Message: cols.Err.Error()}
	}
	out := make([]sdk.Prediction, n)
	for i := range out {
		out[i] = sdk.Prediction{Valid: valid(i), TTFTMs: ttft(i), TPOTMs: tpot(i), TTFTAfterMs: ttftAfter(i), TPOTAfterMs: tpotAfter(i),
			TTFTSpread: ttftSpread(i), TPOTSpread: tpotSpread(i)}
	}
	return out, nil
}

// requestToProto returns the wire form of r.
func requestToProto(r *sdk.Request) *pb.Request {
	return &pb.Request{
		Id:                r.ID,
		Model:             r.Model,
		InputTokens:       r.InputTokens,
		MaxOutputTokens:   r.MaxOutputTokens,
		Streaming:         r.Streaming,
		Slo:               &pb.Slo{TtftMs: r.SLO.TTFTMs, TpotMs: r.SLO.TPOTMs},
		Priority:          r.Priority,
		SessionId:         r.SessionID,
		PrefixBlockHashes: r.PrefixBlockHashes,
		Labels:            r.Labels,
		Disaggregation:    disaggregationToProto(&r.Disaggregation),
	}
}

// disaggregationToProto returns the wire form of d: nil for a request served whole, so that a
// fleet without disaggregation sends nothing more.
func disaggregationToProto(d *sdk.Disaggregation) *pb.Disaggregation {
	if *d == (sdk.Disaggregation{}) {
		return nil
	}
	return &pb.Disaggregation{Hop: pb.Hop(d.Hop), DecodeEndpoint: d.DecodeEndpoint, DecodeTtftMs: d.DecodeTTFTMs, DecodeTpotMs: d.DecodeTPOTMs}
}

// sampleToProto returns the wire form of s.
func sampleToProto(s *sdk.Sample) *pb.Sample {
	st := &s.State
	return &pb.Sample{
		Request:    requestToProto(&s.Request),
		EndpointId: s.EndpointID,
		State: &pb.EndpointState{
			KvCacheUsage:          st.KVCacheUsage,
			Waiting:               st.Waiting,
			Running:               st.Running,
			InflightRequests:      st.InflightRequests,
			PrefillTokensInFlight: st.PrefillTokensInFlight,
			DecodeTokensInFlight:  st.DecodeTokensInFlight,
			PrefixMatch:           st.PrefixMatch,
			MinRunningTpotSloMs:   st.MinRunningTPOTSLOMs,
			MetricsAgeMs:          st.MetricsAgeMs,
			LastOutputAgeMs:       st.LastOutputAgeMs,
			DispatchedSinceScrape: st.DispatchedSinceScrape,
			FirstTokenRate:        st.FirstTokenRate,
			RunningTpotMs:         st.RunningTPOTMs,
		},
		Predicted:    &pb.Prediction{Valid: s.Predicted.Valid, TtftMs: s.Predicted.TTFTMs, TpotMs: s.Predicted.TPOTMs},
		ActualTtftMs: s.ActualTTFTMs,
		ActualTpotMs: s.ActualTPOTMs,
		OutputTokens: s.OutputTokens,
		DispatchedAt: timestamppb.New(s.DispatchedAt),
	}
}

// infoFromProto returns the sdk form of p.
func infoFromProto(p *pb.GetInfoResponse) sdk.Info {
	return sdk.Info{Type: p.GetType(), Stage: sdk.Stage(p.GetStage()), Version: p.GetVersion(), Description: p.GetDescription(), Reads: p.GetReads(),
		MultiInstance: p.GetMultiInstance(), Rounds: p.GetRounds()}
}

// indicesFromProto converts endpoint indices, rejecting any outside [0, n).
func indicesFromProto(idx []uint32, n int) ([]int, error) {
	out := make([]int, len(idx))
	for i, v := range idx {
		out[i] = int(v)
	}
	return out, wire.CheckIndices(out, n)
}

// predictorStatsFromProto converts stats (nil stays nil).
func predictorStatsFromProto(p *pb.PredictorStats) *sdk.PredictorStats {
	if p == nil {
		return nil
	}
	target := func(t *pb.TargetStats) sdk.TargetStats {
		return sdk.TargetStats{Samples: t.GetSamples(), MAPE: t.GetMape(), MAE: t.GetMae(), QuantileCoverage: t.QuantileCoverage}
	}
	return &sdk.PredictorStats{ModelVersion: p.GetModelVersion(), TrainingRows: p.GetTrainingRows(),
		TTFT: target(p.GetTtft()), TPOT: target(p.GetTpot()), Drift: p.GetDrift()}
}

// statusFromProto returns nil for an absent or success status and a *sdk.StatusError otherwise.
func statusFromProto(s *pb.Status) error {
	if s == nil || s.GetCode() == pb.StatusCode_STATUS_CODE_UNSPECIFIED {
		return nil
	}
	return &sdk.StatusError{Code: sdk.Code(s.GetCode()), Message: s.GetMessage()}
}
