package experiment

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWindow is the number of recent outcomes an arm keeps when NewRecorder gets window <= 0.
const DefaultWindow = 10000

// maxDisagreements is how many recent shadow disagreements a Recorder keeps.
const maxDisagreements = 20

// Outcome is one finished request as the experiment sees it.
type Outcome struct {
	TTFTMs, TPOTMs, E2EMs float64 // 0 = not observed (e.g. non-streamed TTFT, one-token TPOT)
	SLOTTFTMs, SLOTPOTMs  float64 // 0 = no objective of that kind
	Failed                bool    // the request ended in an error (5xx, or upstream failure)
}

// hasSLO reports whether o has at least one objective.
func (o Outcome) hasSLO() bool { return o.SLOTTFTMs > 0 || o.SLOTPOTMs > 0 }

// metSLO reports whether o, which has an objective, met it: it did not fail and every objective
// it has was met by its observed value. An objective whose value was not observed counts as met.
func (o Outcome) metSLO() bool {
	if o.Failed {
		return false
	}
	if o.SLOTTFTMs > 0 && o.TTFTMs > 0 && o.TTFTMs > o.SLOTTFTMs {
		return false
	}
	if o.SLOTPOTMs > 0 && o.TPOTMs > 0 && o.TPOTMs > o.SLOTPOTMs {
		return false
	}
	return true
}

// Recorder collects outcomes per arm and the shadow arm's agreement. It is safe for concurrent
// use.
type Recorder struct {
	slot    string
	names   []string        // arms in config order; names[0] is the baseline
	arms    map[string]*arm // fixed after NewRecorder, so lookups need no lock
	window  int
	unknown atomic.Int64

	shadowName string
	now        func() time.Time

	shadowMu sync.Mutex
	cycles   int64
	agreed   int64
	disagree []Disagreement // ring of the last maxDisagreements
	next     int            // where the next disagreement goes once the ring is full
}

// arm is one arm's window and lifetime counters.
type arm struct {
	mu       sync.Mutex
	buf      []Outcome // grows to the window, then is overwritten in a ring
	next     int       // where the next outcome goes once buf is full
	requests int64
	failed   int64
}

// NewRecorder returns a Recorder for the experiment on slot (the pipeline slot, e.g. "scorers.0")
// with the given arms in config order (the first is the baseline the others are compared with)
// and shadow, the shadow arm's name or "" when there is none. Each arm keeps its last window
// outcomes, DefaultWindow when window <= 0. A repeated arm name is kept once, at its first place.
func NewRecorder(slot string, arms []string, shadow string, window int) *Recorder {
	if window <= 0 {
		window = DefaultWindow
	}
	t := &Recorder{
		slot:       slot,
		arms:       make(map[string]*arm, len(arms)),
		window:     window,
		shadowName: shadow,
		now:        time.Now,
	}
	for _, name := range arms {
		if _, dup := t.arms[name]; dup {
			continue
		}
		t.arms[name] = &arm{}
		t.names = append(t.names, name)
	}
	return t
}

// Record adds one finished request's outcome to arm. An outcome for an arm the Recorder does not
// know is dropped and counted in Report.Unknown.
func (t *Recorder) Record(armName string, o Outcome) {
	a := t.arms[armName]
	if a == nil {
		t.unknown.Add(1)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	if o.Failed {
		a.failed++
	}
	if len(a.buf) < t.window {
		a.buf = append(a.buf, o)
		return
	}
	a.buf[a.next] = o
	a.next = (a.next + 1) % t.window
}

// RecordShadow records one cycle in which the shadow arm decided too: whether its decision
// matched the enacted one, and the two decisions as short strings (endpoint ids, or
// "admit"/"shed: reason"). The Recorder keeps lifetime counts and the last 20 disagreements. It
// does nothing when the Recorder has no shadow arm.
func (t *Recorder) RecordShadow(agreed bool, primary, shadow string) {
	if t.shadowName == "" {
		return
	}
	t.shadowMu.Lock()
	defer t.shadowMu.Unlock()
	t.cycles++
	if agreed {
		t.agreed++
		return
	}
	d := Disagreement{At: t.now(), Primary: primary, Shadow: shadow}
	if len(t.disagree) < maxDisagreements {
		t.disagree = append(t.disagree, d)
		return
	}
	t.disagree[t.next] = d
	t.next = (t.next + 1) % maxDisagreements
}

// snapshot returns a copy of the arm's window (in no particular order) and its lifetime counts.
func (a *arm) snapshot() (window []Outcome, requests, failed int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Outcome(nil), a.buf...), a.requests, a.failed
}

// shadowSnapshot returns the shadow report, or nil when the Recorder has no shadow arm.
func (t *Recorder) shadowSnapshot() *ShadowReport {
	if t.shadowName == "" {
		return nil
	}
	t.shadowMu.Lock()
	defer t.shadowMu.Unlock()
	r := &ShadowReport{Name: t.shadowName, Cycles: t.cycles, Agreed: t.agreed}
	if t.cycles > 0 {
		r.AgreementRate = float64(t.agreed) / float64(t.cycles)
	}
	// Oldest first: once the ring is full, the oldest entry is the one to be overwritten next.
	r.LastDisagreements = make([]Disagreement, 0, len(t.disagree))
	r.LastDisagreements = append(r.LastDisagreements, t.disagree[t.next:]...)
	r.LastDisagreements = append(r.LastDisagreements, t.disagree[:t.next]...)
	return r
}
