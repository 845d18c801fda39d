package admin

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Default sizes of the dashboard's memories: 500 latency pairs are a few minutes of a demo's
// traffic and about 50 KB of JSON a second for a page polling GET /admin/dashboard.json; 100
// events outlast any burst of reloads an operator makes by hand.
const (
	DefaultSamples = 500
	DefaultEvents  = 100
)

// ring keeps the last len(buf) values added. It is not safe for concurrent use by itself.
type ring[T any] struct {
	buf   []T
	next  int
	full  bool
	added uint64
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) add(v T) {
	r.buf[r.next] = v
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
	r.added++
}

// all returns the kept values, oldest first.
func (r *ring[T]) all() []T {
	out := make([]T, 0, len(r.buf)) // never nil: an empty memory is [] in JSON, not null
	if r.full {
		out = append(out, r.buf[r.next:]...)
	}
	return append(out, r.buf[:r.next]...)
}

// Point is one predicted-versus-actual latency: the prediction the producer made at dispatch for
// the endpoint that served the request, and what the router then measured.
type Point struct {
	At          time.Time `json:"at"` // when the latency was measured
	Endpoint    string    `json:"endpoint"`
	Metric      string    `json:"metric"` // "ttft" or "tpot"
	PredictedMs float64   `json:"predicted_ms"`
	ActualMs    float64   `json:"actual_ms"`
}

// Samples keeps the last latency pairs of the samples the router sends the producer. A sample
// whose prediction was missing (no producer, a fallback, a TPOT not yet learned) has no pair: it
// is counted as unpredicted, not kept. Safe for concurrent use.
type Samples struct {
	mu          sync.Mutex
	points      ring[Point]
	unpredicted uint64
}

// NewSamples returns a memory of the last n pairs (n <= 0: DefaultSamples).
func NewSamples(n int) *Samples {
	if n <= 0 {
		n = DefaultSamples
	}
	return &Samples{points: newRing[Point](n)}
}

// Add records the measures of s, taken at at (feedback.Batcher.Tap's signature). A first-token
// sample gives a TTFT pair, a finished request's sample a TPOT pair.
func (s *Samples) Add(smp sdk.Sample, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []struct {
		name              string
		predicted, actual float64
	}{{"ttft", smp.Predicted.TTFTMs, smp.ActualTTFTMs}, {"tpot", smp.Predicted.TPOTMs, smp.ActualTPOTMs}} {
		if m.actual <= 0 {
			continue // not measured in this sample
		}
		if !smp.Predicted.Valid || m.predicted <= 0 {
			s.unpredicted++
			continue
		}
		s.points.add(Point{At: at, Endpoint: smp.EndpointID, Metric: m.name, PredictedMs: m.predicted, ActualMs: m.actual})
	}
}

// SampleView is the pairs as GET /admin/dashboard.json shows them.
type SampleView struct {
	Capacity    int     `json:"capacity"`    // how many pairs are kept
	Seen        uint64  `json:"seen"`        // pairs recorded since the start, kept or since pushed out
	Unpredicted uint64  `json:"unpredicted"` // measures without a prediction to pair with
	Points      []Point `json:"points"`      // the last Capacity pairs, oldest first
}

// View returns the kept pairs.
func (s *Samples) View() SampleView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SampleView{Capacity: len(s.points.buf), Seen: s.points.added, Unpredicted: s.unpredicted, Points: s.points.all()}
}

// Event kinds.
const (
	EventStart   = "start"   // the router started serving
	EventReload  = "reload"  // the pipeline was rebuilt from the config file
	EventSwap    = "swap"    // PUT /admin/stages/{slot} served a slot with another plugin
	EventRestart = "restart" // a plugin process exited and was restarted
)

// Event is one change of the serving pipeline.
type Event struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	OK   bool      `json:"ok"` // false: a reload or swap failed and the old pipeline kept serving
	// Source says who asked (SIGHUP, POST /admin/reload, …) or, for a restart, which plugin.
	Source     string `json:"source"`
	Generation int    `json:"generation,omitempty"` // the pipeline's generation after a reload or swap
	Detail     string `json:"detail,omitempty"`     // the error of a failed one; a restart's count
}

// Events keeps the last pipeline events. Safe for concurrent use.
type Events struct {
	mu       sync.Mutex
	events   ring[Event]
	restarts map[string]int64 // per plugin, the restart count last seen by Restarts
}

// NewEvents returns a memory of the last n events (n <= 0: DefaultEvents).
func NewEvents(n int) *Events {
	if n <= 0 {
		n = DefaultEvents
	}
	return &Events{events: newRing[Event](n), restarts: map[string]int64{}}
}

// Add records e.
func (e *Events) Add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events.add(ev)
}

// Restarts records a restart event for every plugin whose restart count (pluginhost.Status.Restarts)
// grew since the last call, dated now: the process supervisor counts restarts but has no hook, so
// the router polls, and a restart shows up to one poll late. A plugin seen for the first time
// with restarts already counted gets an event too.
func (e *Events) Restarts(counts map[string]int64, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		n := counts[name]
		if n > e.restarts[name] {
			e.events.add(Event{At: now, Kind: EventRestart, OK: true, Source: name, Detail: restartDetail(n)})
		}
		e.restarts[name] = n
	}
}

func restartDetail(n int64) string {
	if n == 1 {
		return "1 restart so far"
	}
	return strconv.FormatInt(n, 10) + " restarts so far"
}

// EventView is the events as GET /admin/dashboard.json shows them.
type EventView struct {
	Capacity int     `json:"capacity"`
	Seen     uint64  `json:"seen"`  // events since the start, kept or since pushed out
	Items    []Event `json:"items"` // the last Capacity events, oldest first
}

// View returns the kept events.
func (e *Events) View() EventView {
	e.mu.Lock()
	defer e.mu.Unlock()
	return EventView{Capacity: len(e.events.buf), Seen: e.events.added, Items: e.events.all()}
}
