// Package profiled implements the profile-producer, Llumnix's latency predictor as a stage: it
// predicts each endpoint's TTFT and TPOT from a pair of offline profiles of the engine (the
// latency of a prefill of N tokens; of a decode step over batch size × tokens per request),
// applied to the endpoint's load, and learns nothing online. The learned producer's coldStart
// parameter predicts with the same Model.
package profiled

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/foresight-router/foresight/internal/profile"
	"github.com/foresight-router/foresight/plugins/internal/quality"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Type is the plugin type declared in the host configuration.
const Type = "profile-producer"

// qualityWindow is how many recent measurements the reported error covers, as the learned
// producer's.
const qualityWindow = 1000

// Model is a pair of profiles read with their parameters: Llumnix's predictor, ready to predict
// from a cycle's state.
type Model struct {
	predictor  profile.Predictor
	kvCapacity float64
	version    uint64 // counts the profiles put in service
}

// Producer is the profile-producer. The zero value is not usable; call New.
type Producer struct {
	cur atomic.Pointer[Model]

	mu         sync.Mutex // guards the error windows
	ttft, tpot *quality.Window
}

var _ sdk.Producer = (*Producer)(nil)

// New returns a producer without profiles: it answers UNAVAILABLE until Configure gives it some
// (the host configures every plugin before its first cycle).
func New() *Producer {
	return &Producer{ttft: quality.NewWindow(qualityWindow), tpot: quality.NewWindow(qualityWindow)}
}

// Type returns "profile-producer".
func (p *Producer) Type() string { return Type }

// Description returns one line saying what the producer does.
func (p *Producer) Description() string {
	return "predicts TTFT and TPOT from Llumnix's offline TTFT and TPOT profiles of the engine, by interpolation over the endpoint's load"
}

// Reads declares what the predictions rest on: the request's prompt, and each endpoint's KV
// usage, running batch, the router's in-flight requests and prompt tokens, and prefix match.
func (p *Producer) Reads() []string { return Reads }

// Configure decodes params over Defaults, reads both profiles and puts them in service; on any
// error the profiles in force stay.
func (p *Producer) Configure(params []byte) error {
	prm, err := sdk.DecodeParams(params, Defaults())
	if err != nil {
		return err
	}
	m, err := Load(prm)
	if err != nil {
		return err
	}
	if old := p.cur.Load(); old != nil {
		m.version = old.version + 1
	} else {
		m.version = 1
	}
	p.cur.Store(m)
	return nil
}

// Load reads prm's profiles and settles the engine's shape: parameters first, then the profiles'
// metadata, then the defaults Params documents. Relative paths resolve as sdk.ResolvePath says.
func Load(prm Params) (*Model, error) {
	read := func(name string) ([]byte, error) {
		data, err := os.ReadFile(sdk.ResolvePath(name))
		if err != nil {
			return nil, fmt.Errorf("reading a profile: %w", err)
		}
		return data, nil
	}
	data, err := read(prm.TTFTProfile)
	if err != nil {
		return nil, err
	}
	ttft, err := profile.ParseTTFT(prm.TTFTProfile, data, prm.Percentile)
	if err != nil {
		return nil, err
	}
	if data, err = read(prm.TPOTProfile); err != nil {
		return nil, err
	}
	tpot, err := profile.ParseTPOT(prm.TPOTProfile, data, prm.Percentile)
	if err != nil {
		return nil, err
	}
	md := ttft.Metadata
	budget := float64(firstPositive(prm.MaxNumBatchedTokens, md.MaxNumBatchedTokens, defaultMaxNumBatchedTokens))
	chunked := true
	switch {
	case prm.Chunked != nil:
		chunked = *prm.Chunked
	case md.ChunkedPrefill != nil:
		chunked = *md.ChunkedPrefill
	}
	if !chunked {
		budget = 0
	}
	kv := firstPositive(prm.KVCacheTokens, tpot.Metadata.KVCacheTokens)
	if kv == 0 {
		return nil, fmt.Errorf(`parameter "kvCacheTokens" is needed: %s records no kv_cache_tokens, and the decode batch's tokens are read as kv_cache_usage × the KV-cache capacity (vLLM logs it at start: "GPU KV cache size: N tokens")`, prm.TPOTProfile)
	}
	return &Model{predictor: profile.Predictor{TTFT: ttft, TPOT: tpot, MaxNumBatchedTokens: budget},
		kvCapacity: float64(kv)}, nil
}

func firstPositive(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// Produce predicts each endpoint's TTFT and TPOT with the profiles in force (Model.Predict).
func (p *Producer) Produce(_ context.Context, c *sdk.Cycle) ([]sdk.Prediction, error) {
	if c == nil {
		return nil, errors.New("producing: nil cycle")
	}
	m := p.cur.Load()
	if m == nil {
		return nil, &sdk.StatusError{Code: sdk.CodeUnavailable, Message: "no profiles: the producer is not configured"}
	}
	out := make([]sdk.Prediction, len(c.Endpoints))
	for i := range c.Endpoints {
		ttft, tpot := m.Predict(&c.Request, &c.Endpoints[i].State)
		out[i] = sdk.Prediction{Valid: finite(ttft) && finite(tpot), TTFTMs: ttft, TPOTMs: tpot}
	}
	return out, nil
}

// Predict is Llumnix's prefill-stage TTFT and decode-stage TPOT of request r on an endpoint in
// state s:
//
//   - the decode batch is the larger of the engine's running gauge and the router's requests in
//     flight there (the gauge lags the router's dispatches; the router does not see other
//     routers' traffic), holding kv_cache_usage × kvCacheTokens tokens;
//   - TTFT is the prefill of the prompt tokens the router has dispatched there and not yet seen
//     answered, plus this request's own uncached tokens (input × (1 − prefix match)), in chunks
//     of the step budget each beside a decode step of that batch;
//   - TPOT is a decode step of that batch with this request in it: one more request, its
//     prompt's tokens more.
//
// Llumnix counts the whole prompt and subtracts the time since the engine's last status report;
// the router's own ledger is current, and its prefix index says what the engine already holds.
// It reads only the fields the producer's Reads declares.
func (m *Model) Predict(r *sdk.Request, s *sdk.EndpointState) (ttftMs, tpotMs float64) {
	in := float64(r.InputTokens)
	reqs := float64(max(s.Running, s.InflightRequests))
	tokens := s.KVCacheUsage * m.kvCapacity
	own := in * (1 - s.PrefixMatch)
	return m.predictor.Prefill(float64(s.PrefillTokensInFlight)+own, reqs, tokens), m.predictor.DecodeStep(reqs+1, tokens+in)
}

// Reads are the cycle fields Model.Predict reads.
var Reads = []string{"request", "endpoints.states.kv_cache_usage", "endpoints.states.running",
	"endpoints.states.inflight_requests", "endpoints.states.prefill_tokens_in_flight",
	"endpoints.states.prefix_match"}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// Observe learns nothing, but takes (and counts as accepted) the samples that carry a valid
// prediction, to score it against what the router measured: the router's predictor metrics
// (and a bench's error column) show how well the profiles describe the fleet.
func (p *Producer) Observe(_ context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	scored := 0
	for _, s := range samples {
		if !s.Predicted.Valid {
			continue
		}
		scored++
		if s.ActualTTFTMs > 0 {
			p.ttft.Add(s.Predicted.TTFTMs, s.ActualTTFTMs)
		}
		if s.ActualTPOTMs > 0 && s.Predicted.TPOTMs > 0 {
			p.tpot.Add(s.Predicted.TPOTMs, s.ActualTPOTMs)
		}
	}
	var version uint64
	if m := p.cur.Load(); m != nil {
		version = m.version
	}
	return sdk.ObserveResult{Accepted: scored, Stats: &sdk.PredictorStats{ModelVersion: version,
		TTFT: p.ttft.Stats(false), TPOT: p.tpot.Stats(false)}}, nil
}
