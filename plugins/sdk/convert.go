package sdk

import (
	"fmt"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Conversions between the sdk types and their wire form. The cycle travels in columnar form (see
// Endpoints in types.proto); everything else maps field by field.

// CycleToProto returns the wire form of c.
func CycleToProto(c *Cycle) *pb.Cycle {
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
		eps.Predictions = PredictionsToProto(c.Endpoints, func(e *Endpoint) Prediction { return e.Prediction })
	}
	return &pb.Cycle{
		Request:   RequestToProto(&c.Request),
		Endpoints: eps,
		Now:       timestamppb.New(c.Now),
		Seed:      c.Seed,
	}
}

// CycleFromProto returns the sdk form of p, or an error when a column's length does not match the ids.
func CycleFromProto(p *pb.Cycle) (*Cycle, error) {
	c := &Cycle{Request: RequestFromProto(p.GetRequest()), Seed: p.GetSeed()}
	if p.GetNow() != nil {
		c.Now = p.GetNow().AsTime()
	}
	eps := p.GetEndpoints()
	n := int(eps.GetCount())
	if n == 0 {
		n = len(eps.GetIds())
	}
	s := eps.GetStates()
	cols := columnCheck{n: n}
	ids := columnOf(&cols, "ids", eps.GetIds())
	kv := cols.f64("kv_cache_usage", s.GetKvCacheUsage())
	waiting := cols.i64("waiting", s.GetWaiting())
	running := cols.i64("running", s.GetRunning())
	inflight := cols.i64("inflight_requests", s.GetInflightRequests())
	prefill := cols.i64("prefill_tokens_in_flight", s.GetPrefillTokensInFlight())
	decode := cols.i64("decode_tokens_in_flight", s.GetDecodeTokensInFlight())
	prefix := cols.f64("prefix_match", s.GetPrefixMatch())
	minTPOT := cols.f64("min_running_tpot_slo_ms", s.GetMinRunningTpotSloMs())
	age := cols.f64("metrics_age_ms", s.GetMetricsAgeMs())
	outputAge := cols.f64("last_output_age_ms", s.GetLastOutputAgeMs())
	pr := eps.GetPredictions()
	valid := columnOf(&cols, "predictions.valid", pr.GetValid())
	ttft := cols.f64("predictions.ttft_ms", pr.GetTtftMs())
	tpot := cols.f64("predictions.tpot_ms", pr.GetTpotMs())
	labels := columnOf(&cols, "labels", eps.GetLabels())
	if cols.err != nil {
		return nil, cols.err
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
			},
			Prediction: Prediction{Valid: valid(i), TTFTMs: ttft(i), TPOTMs: tpot(i)},
		}
		if l := labels(i); l != nil {
			c.Endpoints[i].Labels = l.GetValues()
		}
	}
	return c, nil
}

// columnCheck reads columns that are either empty (all zero) or exactly n long, remembering the
// first column of another length.
type columnCheck struct {
	n   int
	err error
}

func (cc *columnCheck) f64(name string, col []float64) func(int) float64 {
	return columnOf(cc, name, col)
}
func (cc *columnCheck) i64(name string, col []int64) func(int) int64 { return columnOf(cc, name, col) }

func columnOf[T any](cc *columnCheck, name string, col []T) func(int) T {
	if len(col) == 0 {
		return func(int) T { var zero T; return zero }
	}
	if len(col) != cc.n && cc.err == nil {
		cc.err = &StatusError{Code: CodeInvalidArgument,
			Message: fmt.Sprintf("invalid cycle: column %q has %d entries for %d endpoints", name, len(col), cc.n)}
	}
	return func(i int) T { return col[i] }
}

// PredictionsToProto returns the columnar wire form of one prediction per endpoint.
func PredictionsToProto[T any](items []T, get func(*T) Prediction) *pb.Predictions {
	p := &pb.Predictions{
		Valid:  make([]bool, len(items)),
		TtftMs: make([]float64, len(items)),
		TpotMs: make([]float64, len(items)),
	}
	for i := range items {
		pr := get(&items[i])
		p.Valid[i], p.TtftMs[i], p.TpotMs[i] = pr.Valid, pr.TTFTMs, pr.TPOTMs
	}
	return p
}

// PredictionsFromProto returns n predictions from their columnar wire form (absent columns read as zero).
func PredictionsFromProto(p *pb.Predictions, n int) ([]Prediction, error) {
	cols := columnCheck{n: n}
	valid := columnOf(&cols, "predictions.valid", p.GetValid())
	ttft := cols.f64("predictions.ttft_ms", p.GetTtftMs())
	tpot := cols.f64("predictions.tpot_ms", p.GetTpotMs())
	if cols.err != nil {
		return nil, cols.err
	}
	out := make([]Prediction, n)
	for i := range out {
		out[i] = Prediction{Valid: valid(i), TTFTMs: ttft(i), TPOTMs: tpot(i)}
	}
	return out, nil
}

// RequestToProto returns the wire form of r.
func RequestToProto(r *Request) *pb.Request {
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
	}
}

// RequestFromProto returns the sdk form of p (nil reads as the zero request).
func RequestFromProto(p *pb.Request) Request {
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
	}
}

// SampleToProto returns the wire form of s.
func SampleToProto(s *Sample) *pb.Sample {
	st := &s.State
	return &pb.Sample{
		Request:    RequestToProto(&s.Request),
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
		},
		Predicted:    &pb.Prediction{Valid: s.Predicted.Valid, TtftMs: s.Predicted.TTFTMs, TpotMs: s.Predicted.TPOTMs},
		ActualTtftMs: s.ActualTTFTMs,
		ActualTpotMs: s.ActualTPOTMs,
		OutputTokens: s.OutputTokens,
		DispatchedAt: timestamppb.New(s.DispatchedAt),
	}
}

// SampleFromProto returns the sdk form of p.
func SampleFromProto(p *pb.Sample) Sample {
	st := p.GetState()
	s := Sample{
		Request:    RequestFromProto(p.GetRequest()),
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

// InfoToProto returns the wire form of i.
func InfoToProto(i Info) *pb.GetInfoResponse {
	return &pb.GetInfoResponse{Type: i.Type, Stage: pb.Stage(i.Stage), Version: i.Version, Description: i.Description, Reads: i.Reads}
}

// InfoFromProto returns the sdk form of p.
func InfoFromProto(p *pb.GetInfoResponse) Info {
	return Info{Type: p.GetType(), Stage: Stage(p.GetStage()), Version: p.GetVersion(), Description: p.GetDescription(), Reads: p.GetReads()}
}

func indicesToProto(idx []int) []uint32 {
	out := make([]uint32, len(idx))
	for i, v := range idx {
		out[i] = uint32(v)
	}
	return out
}

// indicesFromProto converts endpoint indices, rejecting any outside [0, n).
func indicesFromProto(idx []uint32, n int) ([]int, error) {
	out := make([]int, len(idx))
	for i, v := range idx {
		out[i] = int(v)
	}
	return out, checkIndices(out, n)
}

// PredictorStatsToProto converts stats (nil stays nil).
func PredictorStatsToProto(s *PredictorStats) *pb.PredictorStats {
	if s == nil {
		return nil
	}
	target := func(t *TargetStats) *pb.TargetStats {
		return &pb.TargetStats{Samples: t.Samples, Mape: t.MAPE, Mae: t.MAE, QuantileCoverage: t.QuantileCoverage}
	}
	return &pb.PredictorStats{ModelVersion: s.ModelVersion, TrainingRows: s.TrainingRows,
		Ttft: target(&s.TTFT), Tpot: target(&s.TPOT), Drift: s.Drift}
}

// PredictorStatsFromProto converts stats (nil stays nil).
func PredictorStatsFromProto(p *pb.PredictorStats) *PredictorStats {
	if p == nil {
		return nil
	}
	target := func(t *pb.TargetStats) TargetStats {
		return TargetStats{Samples: t.GetSamples(), MAPE: t.GetMape(), MAE: t.GetMae(), QuantileCoverage: t.QuantileCoverage}
	}
	return &PredictorStats{ModelVersion: p.GetModelVersion(), TrainingRows: p.GetTrainingRows(),
		TTFT: target(p.GetTtft()), TPOT: target(p.GetTpot()), Drift: p.GetDrift()}
}
