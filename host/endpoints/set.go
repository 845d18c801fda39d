package endpoints

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// State is one endpoint as the router knows it at a moment.
type State struct {
	Endpoint
	// Healthy says the endpoint answers: endpoints start healthy and stop after FailAfter
	// consecutive failures (scrapes, probes, connections); a successful scrape brings them back.
	// It is in the rotation while healthy and not ejected (Routable).
	Healthy bool
	// Waiting, Running and KVCacheUsage are the engine gauges of the last successful scrape.
	Waiting      int64
	Running      int64
	KVCacheUsage float64
	// BlockSize and NumGPUBlocks come from the cache-config info metric; 0 when unknown.
	BlockSize    int
	NumGPUBlocks int
	// Models are the ids from GET /v1/models ("data"[].id), sorted; nil before the first answer.
	Models []string
	// ScrapedAt is the time of the last successful scrape; zero before one.
	ScrapedAt time.Time
	// MetricsAge is now − ScrapedAt when the state was read (0 before a scrape).
	MetricsAge time.Duration
	// Failures counts consecutive failures.
	Failures int
	// LastError describes the last failure; "" after a success.
	LastError string
	// Ejected says the endpoint is out of the rotation until EjectedUntil because its requests
	// kept failing (ReportRequest); it is scraped meanwhile, and Healthy says what the scrapes
	// say. Ejections counts its ejections; RequestFailures its failed requests in a row.
	Ejected         bool
	EjectedUntil    time.Time
	Ejections       int64
	RequestFailures int
	// Failing says its last Outlier.ConsecutiveFailures requests or more all failed but outlier
	// detection could not eject it (see Set.ReportRequest): it stays in the rotation but is not
	// serving. Its next request that succeeds clears it.
	Failing bool
}

// Serving reports whether the endpoint answers and serves: healthy and not failing its requests.
// It is what foresight_endpoint_healthy exports: in a full outage, every endpoint stays in the
// rotation (one always does) while none is serving.
func (st *State) Serving() bool { return st.Healthy && !st.Failing }

// Routable reports whether the endpoint is in the rotation: healthy and not ejected.
func (st *State) Routable() bool { return st.Healthy && !st.Ejected }

// OutOfRotation returns why the endpoint is out of the rotation, in the words of a cycle's
// excluded endpoints: sdk.ExcludedUnhealthy (it stopped answering; said first, since it may be
// ejected as well) or sdk.ExcludedEjected (its requests kept failing); "" when it is routable.
func (st *State) OutOfRotation() string {
	switch {
	case !st.Healthy:
		return sdk.ExcludedUnhealthy
	case st.Ejected:
		return sdk.ExcludedEjected
	}
	return ""
}

// Serves reports whether the endpoint serves model, or has not said yet what it serves.
func (st *State) Serves(model string) bool {
	return st.Models == nil || slices.Contains(st.Models, model)
}

// member is one endpoint of a set.
type member struct {
	st       State              // guarded by Set.mu
	cancel   context.CancelFunc // stops its loop; nil while none runs
	streak   int                // the ejection multiplier (Outlier.BaseEjectionTime)
	returned bool               // the end of its last ejection was logged
}

// Set is the fleet: its endpoints, their scraped state and their health. It is safe for
// concurrent use. The Labels map and Models slice of the states it returns are shared and
// must not be modified (the set replaces them, never changes them in place).
type Set struct {
	cfg Config

	mu      sync.RWMutex
	members []*member // configuration order
	byID    map[string]*member
	running bool            // from Run's start until its goroutines stopped
	runCtx  context.Context // non-nil while Run starts loops
	wg      sync.WaitGroup  // the loops Run started
}

// New returns a set of eps configured by cfg. It validates cfg and the list: non-empty unique
// IDs and parseable addresses (the error names the endpoint). Nothing is scraped before Run.
func New(cfg Config, eps []Endpoint) (*Set, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	eps, err = validate(eps)
	if err != nil {
		return nil, err
	}
	s := &Set{cfg: cfg, byID: make(map[string]*member, len(eps))}
	for _, e := range eps {
		m := newMember(e)
		s.members = append(s.members, m)
		s.byID[e.ID] = m
	}
	return s, nil
}

func newMember(e Endpoint) *member { return &member{st: State{Endpoint: e, Healthy: true}} }

// Config returns the set's configuration, defaults applied.
func (s *Set) Config() Config { return s.cfg }

// Snapshot returns every endpoint's state, in configuration order.
func (s *Set) Snapshot() []State { return s.AppendSnapshot(nil) }

// AppendSnapshot appends every endpoint's state, in configuration order, to dst and returns
// the extended slice (a caller on a hot path reuses dst).
func (s *Set) AppendSnapshot(dst []State) []State {
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.members {
		dst = append(dst, m.state(now))
	}
	return dst
}

// Len returns how many endpoints the set has, healthy or not.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.members)
}

// Get returns the state of the endpoint called id.
func (s *Set) Get(id string) (State, bool) {
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.byID[id]
	if m == nil {
		return State{}, false
	}
	return m.state(now), true
}

// state returns a copy of m's state with its age at now; Set.mu must be held.
func (m *member) state(now time.Time) State {
	st := m.st
	if !st.ScrapedAt.IsZero() {
		st.MetricsAge = max(now.Sub(st.ScrapedAt), 0)
	}
	st.Ejected = now.Before(st.EjectedUntil)
	return st
}

// Models returns the sorted union of the healthy endpoints' models (nil when there are none).
func (s *Set) Models() []string {
	s.mu.RLock()
	var all []string
	for _, m := range s.members {
		if m.st.Healthy {
			all = append(all, m.st.Models...)
		}
	}
	s.mu.RUnlock()
	slices.Sort(all)
	return slices.Compact(all)
}

// ReportFailure records that the proxy could not reach the endpoint called id (it failed to
// connect, or the connection broke before a response): it counts toward FailAfter like a failed
// scrape. An unknown id is ignored.
func (s *Set) ReportFailure(id string, err error) {
	msg := "proxy: the request failed"
	if err != nil {
		msg = "proxy: " + err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.byID[id]; m != nil {
		s.fail(m, msg)
	}
}

// ReportSuccess records that the proxy got a response from the endpoint called id: its failure
// count restarts from zero. It does not bring an endpoint back into the rotation; only a
// successful probe does, so that one whose metrics cannot be read stays out. An unknown id is
// ignored.
func (s *Set) ReportSuccess(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.byID[id]; m != nil {
		m.st.Failures, m.st.LastError = 0, ""
	}
}

// fail counts a failure of m; Set.mu must be held.
func (s *Set) fail(m *member, msg string) {
	m.st.Failures++
	m.st.LastError = msg
	if m.st.Failures >= s.cfg.FailAfter {
		m.st.Healthy = false
	}
}

// Update replaces the list (a watched file changed). Endpoints whose ID stays with the same
// address keep their state (labels are updated); new ones start healthy and, while Run runs,
// are scraped at once; removed ones stop. An ID whose address changed is a new endpoint. It
// validates eps as New does and, on error, keeps the old list.
func (s *Set) Update(eps []Endpoint) error {
	eps, err := validate(eps)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	members := make([]*member, 0, len(eps))
	byID := make(map[string]*member, len(eps))
	for _, e := range eps {
		m := s.byID[e.ID]
		if m != nil && m.st.Address == e.Address {
			m.st.Labels, m.st.KVEvents, m.st.KVEventsReplay = e.Labels, e.KVEvents, e.KVEventsReplay
		} else {
			m = newMember(e)
			s.start(m)
		}
		members = append(members, m)
		byID[e.ID] = m
	}
	for id, m := range s.byID {
		if byID[id] != m && m.cancel != nil {
			m.cancel()
		}
	}
	s.members, s.byID = members, byID
	return nil
}
