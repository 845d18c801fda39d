package loadgen

import (
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/internal/quantile"
)

// numKinds is the number of Kind values.
const numKinds = int(Cut) + 1

// Snapshot is the state of a run at one moment.
type Snapshot struct {
	// Elapsed is the time since the run started.
	Elapsed time.Duration
	// Window is the span Recent covers.
	Window time.Duration
	// Dispatched counts requests sent, Skipped arrivals not sent because MaxInFlight requests
	// were in flight, InFlight requests sent and not yet ended.
	Dispatched, Skipped, InFlight int
	// Run covers every request that ended; Recent those that ended in the last Window.
	Run, Recent Summary
	// ByObjective is Run split by the objective sent, interactive and batch (class objectives
	// are not split here).
	ByObjective map[string]Summary
}

// Summary aggregates the requests that ended in a span.
type Summary struct {
	// Ended counts the requests that ended, ByKind splits them by how.
	Ended  int
	ByKind [numKinds]int
	// TTFT, TPOT and E2E are over OK requests (TPOT over those with a measured TPOT), in ms.
	TTFT, TPOT, E2E Percentiles
	// WithSLO counts ended requests that carried an objective, except those Cut (their outcome
	// is unknown); MetSLO those of them that met it (Result.MetSLO).
	WithSLO, MetSLO int
	// PromptTokens, CachedTokens and CompletionTokens sum the OK requests' usage blocks.
	PromptTokens, CachedTokens, CompletionTokens int
	// Failures groups the failed requests (Errors) by why, most frequent first.
	Failures []Failure
}

// Failure is one reason requests failed: those that ended as Kind with the same message once its
// numbers are blanked out (so "8193 input tokens exceed 8192" and "9000 input tokens exceed 8192"
// are one reason), Count of them; Example is the first one's message.
type Failure struct {
	Kind    Kind
	Example string
	Count   int
}

// Percentiles are the p50, p95 and p99 of N values in ms (internal/quantile's linear
// interpolation, numpy's default); all 0 when N is 0.
type Percentiles struct {
	N             int
	P50, P95, P99 float64
}

// Count returns the number of requests that ended as k.
func (s *Summary) Count(k Kind) int { return s.ByKind[k] }

// Errors counts the requests that failed (Kind.failed).
func (s *Summary) Errors() int {
	n := 0
	for k, c := range s.ByKind {
		if Kind(k).failed() {
			n += c
		}
	}
	return n
}

// failed reports whether a request that ended as k failed: a 4xx other than 429, a 5xx, a
// connection or a stream error. OK, shed and cut requests did not.
func (k Kind) failed() bool {
	return k == ClientError || k == ServerError || k == ConnError || k == StreamError
}

// Attainment returns MetSLO / WithSLO; ok is false when no request had an objective.
func (s *Summary) Attainment() (a float64, ok bool) {
	if s.WithSLO == 0 {
		return 0, false
	}
	return float64(s.MetSLO) / float64(s.WithSLO), true
}

// PrefixHitRate returns CachedTokens / PromptTokens, the share of prompt tokens the engines'
// prefix caches served; ok is false before any usage block arrived.
func (s *Summary) PrefixHitRate() (r float64, ok bool) {
	if s.PromptTokens == 0 {
		return 0, false
	}
	return float64(s.CachedTokens) / float64(s.PromptTokens), true
}

// stats collects results. It keeps one small record per ended request: the run's memory is
// proportional to its workload, which the caller already holds.
type stats struct {
	mu         sync.Mutex
	start      time.Time
	window     time.Duration
	dispatched int
	skipped    int
	records    []record
}

type record struct {
	end                        time.Duration // since the start of the run
	kind                       Kind
	objective                  string
	hasSLO, met                bool
	ttft, tpot, e2e            time.Duration
	prompt, cached, completion int
	// err is a failed request's Result.Err, and errKey the same with its numbers blanked out:
	// the reason it is grouped under (Failure), computed once here rather than at every snapshot.
	err, errKey string
}

func (s *stats) begin(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = start
}

func (s *stats) dispatch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatched++
}

func (s *stats) skip() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skipped++
}

func (s *stats) add(r *Result, end time.Duration) {
	rec := record{end: end, kind: r.Kind, objective: r.Objective, hasSLO: r.HasSLO() && r.Kind != Cut,
		met: r.MetSLO(), ttft: r.TTFT, tpot: r.TPOT, e2e: r.E2E,
		prompt: r.PromptTokens, cached: r.CachedTokens, completion: r.CompletionTokens}
	if r.Kind.failed() {
		rec.err, rec.errKey = r.Err, digits.ReplaceAllString(r.Err, "#")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, rec)
}

// snapshot summarises the run at now.
func (s *stats) snapshot(now time.Time) Snapshot {
	s.mu.Lock()
	snap := Snapshot{Window: s.window, Dispatched: s.dispatched, Skipped: s.skipped}
	if !s.start.IsZero() {
		snap.Elapsed = now.Sub(s.start)
	}
	recs := slices.Clone(s.records)
	s.mu.Unlock()
	snap.InFlight = snap.Dispatched - len(recs)
	snap.Run = summarize(recs, func(*record) bool { return true })
	from := snap.Elapsed - s.window
	snap.Recent = summarize(recs, func(r *record) bool { return r.end > from })
	snap.ByObjective = map[string]Summary{}
	for _, name := range []string{ObjectiveInteractive, ObjectiveBatch} {
		if sum := summarize(recs, func(r *record) bool { return r.objective == name }); sum.Ended > 0 {
			snap.ByObjective[name] = sum
		}
	}
	return snap
}

func summarize(recs []record, keep func(*record) bool) Summary {
	var s Summary
	var ttft, tpot, e2e []float64
	var failures failureGroups
	for i := range recs {
		r := &recs[i]
		if !keep(r) {
			continue
		}
		s.Ended++
		s.ByKind[r.kind]++
		if r.kind.failed() {
			failures.add(r)
		}
		if r.hasSLO {
			s.WithSLO++
			if r.met {
				s.MetSLO++
			}
		}
		if r.kind != OK {
			continue
		}
		ttft, e2e = append(ttft, ms(r.ttft)), append(e2e, ms(r.e2e))
		if r.tpot > 0 {
			tpot = append(tpot, ms(r.tpot))
		}
		s.PromptTokens += r.prompt
		s.CachedTokens += r.cached
		s.CompletionTokens += r.completion
	}
	s.TTFT, s.TPOT, s.E2E = percentiles(ttft), percentiles(tpot), percentiles(e2e)
	s.Failures = failures.sorted()
	return s
}

// failureGroups groups failures by kind and message, numbers blanked out (record.errKey).
type failureGroups struct {
	index map[failureKey]int
	list  []Failure
}

type failureKey struct {
	kind Kind
	msg  string
}

// digits are what a failure's message has blanked out to find its reason.
var digits = regexp.MustCompile(`[0-9]+`)

func (g *failureGroups) add(r *record) {
	key := failureKey{r.kind, r.errKey}
	if i, ok := g.index[key]; ok {
		g.list[i].Count++
		return
	}
	if g.index == nil {
		g.index = map[failureKey]int{}
	}
	g.index[key] = len(g.list)
	g.list = append(g.list, Failure{Kind: r.kind, Example: r.err, Count: 1})
}

// sorted returns the groups most frequent first, the first seen first among equals.
func (g *failureGroups) sorted() []Failure {
	slices.SortStableFunc(g.list, func(a, b Failure) int { return b.Count - a.Count })
	return g.list
}

// percentiles sorts v in place and reads its p50, p95 and p99.
func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	return Percentiles{N: len(v), P50: quantile.Sorted(v, 0.50), P95: quantile.Sorted(v, 0.95), P99: quantile.Sorted(v, 0.99)}
}
