package workload

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// Request is one inference request of a workload. Block slices are shared between requests
// (a conversation's turns share one backing array) and must be treated as read-only.
type Request struct {
	// ID is the request's index in arrival order.
	ID uint64
	// Arrival is the time since the start of the run at which the request is sent.
	Arrival time.Duration
	// SessionID names the conversation the request belongs to; "" when it has none.
	SessionID string
	// Turn is the request's 1-based position in its conversation (1 for single requests).
	Turn int
	// InputTokens and OutputTokens are the prompt length and the number of tokens to generate.
	InputTokens, OutputTokens int
	// Blocks are the chained hashes of the prompt's full 16-token blocks: len = InputTokens/16.
	Blocks []uint64
	// OutputBlocks are the chained hashes of the full blocks that prompt+output forms beyond the
	// prompt, so the next turn, whose prompt contains this answer, shares them.
	OutputBlocks []uint64
	// Streaming asks for a streamed (SSE) response.
	Streaming bool
	// SLO is the request's latency objective; zero fields mean none.
	SLO SLO
	// Priority orders requests under overload; negative means sheddable.
	Priority int32
	// Class is the name of the request's class (Params.Classes); "" without classes. The
	// simulated router takes it as the client's tenant (its flow-control fairness key).
	Class string
	// Group is the 1-based prefix group of a shared-prefix scenario's request (the new group of
	// Params.NewGroup is the last); 0 for a request of no group (one-off requests, and every
	// other scenario).
	Group int
}

// SLO is a per-request latency objective in milliseconds; zero means none.
type SLO struct {
	TTFTMs float64
	TPOTMs float64
}

// Class is a request class: requests draw one class each, with probability proportional to
// Weight, and take its SLO, priority and streaming flag.
type Class struct {
	Name      string
	Weight    float64
	SLO       SLO
	Priority  int32
	Streaming bool
}

// Window selects the trace rows whose timestamp t (since the trace's first row) has
// Start <= t < End; a zero End means no upper bound.
type Window struct {
	Start, End time.Duration
}

// Params are the knobs every scenario takes. Zero values mean the scenario's default.
type Params struct {
	// Servers is the fleet size rates scale to (default 1).
	Servers int
	// RatePerServer is the mean arrival rate per server in requests/s (default: the scenario's).
	// The fleet's rate is RatePerServer × Servers. For production it is the high stages' rate;
	// for traces it sets the time scale (0 replays at the trace's own pace).
	RatePerServer float64
	// Requests is how many requests to generate (default 1000; traces: every selected row;
	// production: as many as the ladder's stages hold).
	Requests int
	// Seed makes the workload reproducible: the same parameters and seed give the same requests.
	Seed uint64
	// TracePath is the trace file of azure-conv, azure-code and mooncake.
	TracePath string
	// Window restricts a trace replay to a time window of the trace.
	Window Window
	// Classes, when set, assigns each request a class (SLO, priority, streaming). Without
	// classes every request streams and has no SLO and priority 0.
	Classes []Class
	// MaxTurns ends a conversation after that many turns, the user then starting a new one
	// (shared-prefix scenarios; default 5, negative for never, as inference-perf does).
	MaxTurns int
	// MaxContext starts a new conversation when the next turn's prompt plus output would exceed
	// it (shared-prefix scenarios; default 131072, Llama-3.1's context; negative for no limit).
	MaxContext int
	// Stages and StageDuration shape the production ladder (defaults 8 and 60 s).
	Stages        int
	StageDuration time.Duration
	// LowRatePerServer is the production ladder's low-stage rate (default RatePerServer/5).
	LowRatePerServer float64
	// NewGroup, when set, adds a prefix group that starts arriving mid-run (shared-prefix
	// scenarios only): a new tenant with a system prompt of its own.
	NewGroup *NewGroup
}

// NewGroup is a prefix group that appears mid-run: from request ⌈From·n⌉ on, each request
// belongs to it with probability Share (its own random stream), the others continuing the
// scenario's groups where they left off. The new group has the scenario's users per group, with
// lengths from the scenario's distributions (drawn from a stream of their own, so the requests of
// the other groups keep their lengths), and its own system prompt; the arrival times and classes
// are the scenario's. So the arrival rate stays the same and the new group takes Share of it.
type NewGroup struct {
	From, Share float64
}

// Stage is a stretch of a run with a constant mean arrival rate (fleet-wide, requests/s).
type Stage struct {
	Start, Duration time.Duration
	Rate            float64
}

// Workload is a generated request stream.
type Workload struct {
	// Name is the scenario name.
	Name string
	// Requests are in arrival order; Requests[i].ID == i.
	Requests []Request
	// Rate is the mean fleet-wide arrival rate the workload was generated for (requests/s).
	Rate float64
	// Stages is the arrival-rate schedule (one stage for steady Poisson scenarios, none for traces).
	Stages []Stage
}

// DefaultRequests is the number of requests generated when Params.Requests is zero.
const DefaultRequests = 1000

// Names lists the scenario names Scenario accepts.
func Names() []string {
	return []string{"A", "B", "C", "D", "sharegpt", "production", "azure-conv", "azure-code", "mooncake"}
}

// Scenario generates the named workload.
func Scenario(name string, p Params) (*Workload, error) {
	var (
		w   *Workload
		err error
	)
	n := strings.ToLower(name)
	if p.NewGroup != nil && !slices.Contains([]string{"a", "b", "c", "d"}, n) {
		return nil, fmt.Errorf("scenario %q: a new prefix group needs a shared-prefix scenario (A, B, C or D)", name)
	}
	switch n {
	case "a", "b", "c", "d":
		w, err = SharedPrefix(strings.ToUpper(n), SharedPrefixPresets[strings.ToUpper(n)], p)
	case "sharegpt":
		w, err = ShareGPT(DefaultShareGPT, p)
	case "production":
		w, err = Production(DefaultProduction, p)
	case "azure-conv", "azure-code":
		w, err = Azure(n, p)
	case "mooncake":
		w, err = Mooncake(p)
	default:
		return nil, fmt.Errorf("unknown scenario %q, expected one of %s", name, strings.Join(Names(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("scenario %q: %w", name, err)
	}
	return w, nil
}

func (p Params) validate() error {
	switch {
	case p.Servers < 0:
		return fmt.Errorf("servers must be >= 0, got %d", p.Servers)
	case p.RatePerServer < 0:
		return fmt.Errorf("rate per server must be >= 0, got %v", p.RatePerServer)
	case p.LowRatePerServer < 0:
		return fmt.Errorf("low rate per server must be >= 0, got %v", p.LowRatePerServer)
	case p.Requests < 0:
		return fmt.Errorf("requests must be >= 0, got %d", p.Requests)
	case p.Stages < 0:
		return fmt.Errorf("stages must be >= 0, got %d", p.Stages)
	case p.StageDuration < 0:
		return fmt.Errorf("stage duration must be >= 0, got %v", p.StageDuration)
	case p.Window.Start < 0 || (p.Window.End != 0 && p.Window.End <= p.Window.Start):
		return fmt.Errorf("window must satisfy 0 <= start < end, got [%v, %v)", p.Window.Start, p.Window.End)
	case p.NewGroup != nil && !(p.NewGroup.From >= 0 && p.NewGroup.From < 1):
		return fmt.Errorf("new group: from must be in [0, 1) (a fraction of the requests), got %v", p.NewGroup.From)
	case p.NewGroup != nil && !(p.NewGroup.Share > 0 && p.NewGroup.Share <= 1):
		return fmt.Errorf("new group: share must be in (0, 1], got %v", p.NewGroup.Share)
	}
	return validateClasses(p.Classes)
}

func (p Params) servers() int { return max(p.Servers, 1) }

func (p Params) requests() int {
	if p.Requests == 0 {
		return DefaultRequests
	}
	return p.Requests
}

func (p Params) fleetRate(defaultPerServer float64) float64 {
	r := p.RatePerServer
	r = cmp.Or(r, defaultPerServer)
	return r * float64(p.servers())
}

// Random streams: each concern draws from its own stream so that, e.g., changing the rate does
// not change the lengths.
const (
	streamLengths = iota + 1
	streamOrder
	streamArrivals
	streamClasses
	streamContexts
	streamNewGroup
	streamNewGroupLengths
	streamOneOff
	streamOneOffLengths
)

func newRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, splitmix.Mix(stream+0x6a09e667f3bcc908)))
}

// salt separates the block hashes of different seeds.
func salt(seed uint64) uint64 { return splitmix.Mix(seed ^ 0x3c6ef372fe94f82b) }

// finish numbers the requests, applies the classes and returns the workload.
func finish(name string, reqs []Request, rate float64, stages []Stage, p Params) *Workload {
	var cr *rand.Rand
	if len(p.Classes) > 0 {
		cr = newRand(p.Seed, streamClasses)
	}
	for i := range reqs {
		r := &reqs[i]
		r.ID = uint64(i)
		r.Turn = cmp.Or(r.Turn, 1)
		if cr == nil {
			r.Streaming = true
			continue
		}
		c := p.Classes[pickClass(cr, p.Classes)]
		r.Class, r.SLO, r.Priority, r.Streaming = c.Name, c.SLO, c.Priority, c.Streaming
	}
	return &Workload{Name: name, Requests: reqs, Rate: rate, Stages: slices.Clone(stages)}
}

func validateClasses(cs []Class) error {
	total := 0.0
	for i, c := range cs {
		if c.Weight < 0 {
			return fmt.Errorf("class %d (%q): weight must be >= 0, got %v", i, c.Name, c.Weight)
		}
		if c.SLO.TTFTMs < 0 || c.SLO.TPOTMs < 0 {
			return fmt.Errorf("class %d (%q): SLOs must be >= 0, got %+v", i, c.Name, c.SLO)
		}
		total += c.Weight
	}
	if len(cs) > 0 && total <= 0 {
		return fmt.Errorf("class weights must sum to more than 0")
	}
	return nil
}

func pickClass(r *rand.Rand, cs []Class) int {
	total := 0.0
	for _, c := range cs {
		total += c.Weight
	}
	x := r.Float64() * total
	last := 0
	for i, c := range cs {
		if c.Weight <= 0 {
			continue
		}
		if x < c.Weight {
			return i
		}
		x -= c.Weight
		last = i
	}
	return last // rounding left x at the top: the last class with weight
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
