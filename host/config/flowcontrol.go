package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/flowcontrol"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
)

// FlowControl holds requests in the router while the pool is saturated for them, and dispatches
// them, highest priority first, fairly across flows and in the policy's order, when a server has
// room (host/flowcontrol). It is off unless Enabled. Its two stages, the saturation detector and
// the ordering policy, are the pipeline's detector and order slots when it names them; otherwise
// the built-ins that Policy and Detector configure.
type FlowControl struct {
	Enabled bool `yaml:"enabled"`
	// Policy orders a flow's requests: fcfs, edf or slo-feasible (default slo-feasible), the
	// built-in slo-order's policy.
	Policy string `yaml:"policy"`
	// FlowKey is what makes two requests one flow, the unit of fairness within a priority band:
	// header (default: the value of FlowHeader), user (the body's user field), session (the
	// session id) or objective (the x-llm-d-inference-objective). Requests without one share
	// the flow "".
	FlowKey string `yaml:"flowKey"`
	// FlowHeader names the header of FlowKey header (default x-gateway-inference-fairness-id,
	// the Gateway API Inference Extension's fairness id).
	FlowHeader string `yaml:"flowHeader"`
	// Default bounds every priority band not named in Bands.
	Default BandLimits `yaml:"default"`
	// Bands overrides Default for the priorities it names (an objective's priority; 0 without
	// one); fields left out take Default's.
	Bands map[int32]BandLimits `yaml:"bands"`
	// NoEndpointsTTL is how long a request waits while the pool has no endpoint at all (scaled to
	// zero, or every endpoint out of the rotation) before a 503 (default 30s).
	NoEndpointsTTL time.Duration `yaml:"noEndpointsTTL"`
	// Candidates, with a detector that judges before the pipeline, is what the pipeline chooses
	// among while some endpoint has room: room (default), only the endpoints with room, so the
	// request goes where it will not queue; all, every endpoint, the pipeline free to send it to
	// a full one (a cache-warm server, say) — the detector then only says whether the request
	// waits in the router.
	Candidates string `yaml:"candidates"`
	// Detector configures the built-in saturation detector.
	Detector Detector `yaml:"detector"`
}

// BandLimits bound one priority band; zero fields take the defaults.
type BandLimits struct {
	// MaxRequests is how many requests the band holds (default 2000).
	MaxRequests int `yaml:"maxRequests"`
	// MaxBytes is the sum of the band's request bodies (default 512 MiB).
	MaxBytes int64 `yaml:"maxBytes"`
	// TTL is how long a request may wait in the band before a 429 (default 30s).
	TTL time.Duration `yaml:"ttl"`
}

// Detector configures the built-in saturation detector: predicted-saturation-detector with
// Predictions, else saturation-detector (plugins/sdk/flowpolicy, whose parameters these are, in
// durations where the plugins take milliseconds); zero fields take their defaults.
type Detector struct {
	Predictions      bool          `yaml:"predictions"`
	TTFTMargin       float64       `yaml:"ttftMargin"`
	MaxPredictedWait time.Duration `yaml:"maxPredictedWait"`
	QueueDepth       int64         `yaml:"queueDepth"`
	KVCacheUsage     float64       `yaml:"kvCacheUsage"`
	MaxMetricsAge    time.Duration `yaml:"maxMetricsAge"`
	MaxInflight      int64         `yaml:"maxInflight"`
	MaxQueueWait     time.Duration `yaml:"maxQueueWait"`
	// SlotScrapes: negative learns no slots.
	SlotScrapes int64 `yaml:"slotScrapes"`
}

// The flow control defaults (docs/configuration.md, "Flow control", says why each).
const (
	DefaultFlowPolicy     = flowpolicy.PolicySLOFeasible
	DefaultFlowKey        = FlowKeyHeader
	DefaultFlowHeader     = "x-gateway-inference-fairness-id"
	DefaultBandRequests   = 2000
	DefaultBandBytes      = 512 << 20
	DefaultBandTTL        = 30 * time.Second
	DefaultNoEndpointsTTL = 30 * time.Second
	DefaultCandidates     = CandidatesRoom
)

// The flow keys.
const (
	FlowKeyHeader    = "header"
	FlowKeyUser      = "user"
	FlowKeySession   = "session"
	FlowKeyObjective = "objective"
)

// The candidates values.
const (
	CandidatesRoom = "room"
	CandidatesAll  = "all"
)

// FlowKeys lists the accepted flowKey values.
var FlowKeys = []string{FlowKeyHeader, FlowKeyUser, FlowKeySession, FlowKeyObjective}

func (f *FlowControl) applyDefaults() {
	f.Policy = cmp.Or(f.Policy, DefaultFlowPolicy)
	f.FlowKey = cmp.Or(f.FlowKey, DefaultFlowKey)
	f.FlowHeader = cmp.Or(f.FlowHeader, DefaultFlowHeader)
	f.Default.fill(BandLimits{MaxRequests: DefaultBandRequests, MaxBytes: DefaultBandBytes, TTL: DefaultBandTTL})
	for p, b := range f.Bands {
		b.fill(f.Default)
		f.Bands[p] = b
	}
	f.NoEndpointsTTL = cmp.Or(f.NoEndpointsTTL, DefaultNoEndpointsTTL)
	f.Candidates = cmp.Or(f.Candidates, DefaultCandidates)
	d, def := &f.Detector, flowpolicy.PredictedDefaults()
	d.TTFTMargin = cmp.Or(d.TTFTMargin, def.TTFTMargin)
	d.MaxPredictedWait = cmp.Or(d.MaxPredictedWait, msToDuration(def.MaxPredictedWaitMs))
	d.QueueDepth = cmp.Or(d.QueueDepth, def.QueueDepth)
	d.KVCacheUsage = cmp.Or(d.KVCacheUsage, def.KVCacheUsage)
	d.MaxMetricsAge = cmp.Or(d.MaxMetricsAge, msToDuration(def.MaxMetricsAgeMs))
	d.MaxInflight = cmp.Or(d.MaxInflight, def.MaxInflight)
	d.MaxQueueWait = cmp.Or(d.MaxQueueWait, msToDuration(def.MaxQueueWaitMs))
	d.SlotScrapes = cmp.Or(d.SlotScrapes, def.SlotScrapes)
}

func (b *BandLimits) fill(def BandLimits) {
	b.MaxRequests = cmp.Or(b.MaxRequests, def.MaxRequests)
	b.MaxBytes = cmp.Or(b.MaxBytes, def.MaxBytes)
	b.TTL = cmp.Or(b.TTL, def.TTL)
}

// Queue returns the section as the queue takes it; estimate finds the hopeless requests (see
// flowcontrol.Config.Estimate).
func (f *FlowControl) Queue(estimate func(time.Time) time.Duration) flowcontrol.Config {
	q := flowcontrol.Config{Default: f.Default.limits(), Estimate: estimate}
	if len(f.Bands) > 0 {
		q.Bands = make(map[int]flowcontrol.Limits, len(f.Bands))
		for p, b := range f.Bands {
			q.Bands[int(p)] = b.limits()
		}
	}
	return q
}

func (b BandLimits) limits() flowcontrol.Limits {
	return flowcontrol.Limits{MaxRequests: b.MaxRequests, MaxBytes: b.MaxBytes, TTL: b.TTL}
}

// BuiltinDetector names the built-in saturation detector the section configures and its
// parameters, as the pipeline's detector slot would give them.
func (f *FlowControl) BuiltinDetector() (typ string, params []byte) {
	p := f.Detector.params()
	if !f.Detector.Predictions {
		return flowpolicy.StateDetectorType, mustJSON(p.StateParams)
	}
	return flowpolicy.PredictedDetectorType, mustJSON(p)
}

// params are d's bounds as the detectors' parameters.
func (d *Detector) params() flowpolicy.PredictedParams {
	return flowpolicy.PredictedParams{
		StateParams: flowpolicy.StateParams{QueueDepth: d.QueueDepth, KVCacheUsage: d.KVCacheUsage,
			MaxMetricsAgeMs: durationToMs(d.MaxMetricsAge), MaxInflight: d.MaxInflight,
			MaxQueueWaitMs: max(durationToMs(d.MaxQueueWait), 0), // negative: no time bound
			SlotScrapes:    max(d.SlotScrapes, 0)},               // negative: no slots learned
		TTFTMargin: d.TTFTMargin, MaxPredictedWaitMs: durationToMs(d.MaxPredictedWait),
	}
}

// BuiltinOrder names the built-in ordering policy the section configures and its parameters.
func (f *FlowControl) BuiltinOrder() (typ string, params []byte) {
	return flowpolicy.OrderType, mustJSON(flowpolicy.OrderParams{Policy: f.Policy})
}

// mustJSON encodes parameter structs, which are plain numbers, strings and bools.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding built-in parameters %#v: %v", v, err))
	}
	return b
}

func durationToMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func msToDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// validateFlowControl checks the section, defaults applied, naming the field at fault.
func (c *Config) validateFlowControl() error {
	f := &c.FlowControl
	at := func(field ...any) []any { return append([]any{"flowControl"}, field...) }
	if err := (&flowpolicy.OrderParams{Policy: f.Policy}).Validate(); err != nil {
		return c.errorAt(at("policy"), "%v", err)
	}
	if !slices.Contains(FlowKeys, f.FlowKey) {
		return c.errorAt(at("flowKey"), "must be one of %q, got %q", FlowKeys, f.FlowKey)
	}
	check := func(path []any, b BandLimits) error {
		switch {
		case b.MaxRequests < 0:
			return c.errorAt(append(path, "maxRequests"), "must be > 0, got %d", b.MaxRequests)
		case b.MaxBytes < 0:
			return c.errorAt(append(path, "maxBytes"), "must be > 0, got %d", b.MaxBytes)
		case b.TTL < 0:
			return c.errorAt(append(path, "ttl"), "must be > 0, got %s", b.TTL)
		}
		return nil
	}
	if err := check(at("default"), f.Default); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(f.Bands)) {
		if err := check(at("bands", strconv.Itoa(int(p))), f.Bands[p]); err != nil {
			return err
		}
	}
	if f.Candidates != CandidatesRoom && f.Candidates != CandidatesAll {
		return c.errorAt(at("candidates"), "must be %q or %q, got %q", CandidatesRoom, CandidatesAll, f.Candidates)
	}
	if f.NoEndpointsTTL < 0 {
		return c.errorAt(at("noEndpointsTTL"), "must be > 0, got %s", f.NoEndpointsTTL)
	}
	if f.Detector.MaxPredictedWait < 0 || f.Detector.MaxMetricsAge < 0 {
		return c.errorAt(at("detector"), "maxPredictedWait and maxMetricsAge must be > 0, got %s and %s",
			f.Detector.MaxPredictedWait, f.Detector.MaxMetricsAge)
	}
	// Both detectors' bounds, whichever Predictions selects: a bound given is checked.
	if p := f.Detector.params(); p.Validate() != nil {
		return c.errorAt(at("detector"), "%v", p.Validate())
	}
	// The estimate is the caller's; any non-nil one lets Validate judge the rest.
	if err := f.Queue(func(time.Time) time.Duration { return 0 }).Validate(); err != nil {
		return fmt.Errorf("%s: flowControl: %w", c.file, err)
	}
	return nil
}

// WithDefaults returns a copy of f with every zero field at its default, as parsing gives it: for
// a section built in code.
func (f FlowControl) WithDefaults() FlowControl {
	f.Bands = maps.Clone(f.Bands)
	f.applyDefaults()
	return f
}

// DefaultFlowControl is the section with every default, enabled: what a benchmark runs as "with
// flow control" when no config gives the section.
func DefaultFlowControl() FlowControl {
	f := FlowControl{Enabled: true}
	f.applyDefaults()
	return f
}
