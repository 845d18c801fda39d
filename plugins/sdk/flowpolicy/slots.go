package flowpolicy

import (
	"math"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// slotLearner learns, per endpoint, whether the engine runs a fixed number of requests at once
// (its slots: a slot engine's, or vLLM's max_num_seqs) from the gauges the cycles carry. An engine
// that queues requests while running the same count, scrape after scrape, has that many slots,
// once no scrape has shown it running more for slotSettle; one seen running more than the count
// it queued at has not, and is learned again. The router then sends an endpoint no more than its
// slots, so that no request waits in its queue, committed to it, while another frees first.
//
// A batch engine queues beside a running count that moves with its requests' lengths and its
// step's token budget, and a slow one shows the same gauges over the scrapes of one long step:
// its count keeps rising while it warms up, which slotSettle waits out, and it seldom queues at
// its peak after. When it does, the probe shows the count wrong: a count not seen with a queue
// for slotProbeEvery lets one request more than the slots through, which either waits (and
// confirms the count) or runs (and unlearns it).
type slotLearner struct {
	mu   sync.Mutex
	byID map[string]*slotSeen
	seen int // observations since the last sweep
}

// slotSeen is what the gauges of one endpoint showed.
type slotSeen struct {
	scrape  time.Time // the last scrape observed (the cycle's now less the gauges' age)
	at      time.Time // the cycle it was observed in, for forgetting endpoints gone
	running int64     // the most it was seen running
	since   time.Time // the cycle that first saw it
	queued  int       // scrapes that showed a queue beside exactly that many running
	queue   time.Time // the last of them
}

const (
	// slotForget: an endpoint not seen for this long is dropped, at a sweep every slotSweep
	// observations, so that a fleet whose endpoints come and go does not grow the map.
	slotForget = 10 * time.Minute
	slotSweep  = 4096
	// slotProbeEvery is how long learned slots are trusted without a scrape showing a queue at
	// them: a slot engine busy enough to need them shows one within a scrape of the probe, so one
	// request in its queue every two seconds is the price of noticing a change.
	slotProbeEvery = 2 * time.Second
	// slotSettle is how long the most seen running must stand before it is taken for the slots:
	// a slot engine reaches its slots in its first busy second and never passes them, while a
	// batch engine's count rose for tens of seconds on the routing bench (a four-times-slower
	// engine queued at 127, 135, 141, 147, 169 and 173 running in turn, each for several scrapes
	// of one long step).
	slotSettle = 10 * time.Second
)

// learn observes endpoint i of c and returns how many of the router's requests it may have in
// flight under p (its slots, or one more while they are probed; 0 while unknown, or when p learns
// none), and notes its slots in v (v.Slots is made the first time an endpoint has some).
func (l *slotLearner) learn(c *sdk.Cycle, i int, p *StateParams, v *sdk.SaturationVerdict) int64 {
	if p.SlotScrapes <= 0 {
		return 0
	}
	e := &c.Endpoints[i]
	slots, probing := l.observe(e.ID, c.Now, &e.State, p)
	if slots == 0 {
		return 0
	}
	if v.Slots == nil {
		v.Slots = make([]int, len(c.Endpoints))
	}
	v.Slots[i] = int(min(slots, math.MaxInt32))
	if probing {
		return slots + 1
	}
	return slots
}

// observe records the state s of endpoint id in a cycle at now, once a scrape and only while
// the gauges are fresh (older ones are no evidence of the engine now), and returns its slots
// under p: the running count seen with a queue in at least p.SlotScrapes scrapes, and not
// exceeded for slotSettle; 0 when not learned. probing: no scrape showed a queue at them for
// slotProbeEvery.
func (l *slotLearner) observe(id string, now time.Time, s *sdk.EndpointState, p *StateParams) (slots int64, probing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID == nil {
		l.byID = map[string]*slotSeen{}
	}
	e := l.byID[id]
	if e == nil {
		e = &slotSeen{}
		l.byID[id] = e
	}
	e.at = now
	// A new scrape, by more than a millisecond: the age travels as float milliseconds.
	scrape := now.Add(-time.Duration(s.MetricsAgeMs * float64(time.Millisecond)))
	if s.MetricsAgeMs <= p.MaxMetricsAgeMs && scrape.Sub(e.scrape).Abs() > time.Millisecond {
		e.scrape = scrape
		switch {
		case s.Running > e.running: // more at once than ever: not (yet) its slots
			e.running, e.queued, e.since = s.Running, 0, now
			if s.Waiting > 0 {
				e.queued, e.queue = 1, scrape
			}
		case s.Running == e.running && s.Waiting > 0:
			e.queued++
			e.queue = scrape
		}
		l.sweep(now)
	}
	if int64(e.queued) < p.SlotScrapes || now.Sub(e.since) < slotSettle {
		return 0, false
	}
	return e.running, now.Sub(e.queue) > slotProbeEvery
}

// sweep drops the endpoints not seen for slotForget, every slotSweep observations; the caller
// holds mu.
func (l *slotLearner) sweep(now time.Time) {
	if l.seen++; l.seen < slotSweep {
		return
	}
	l.seen = 0
	for k, v := range l.byID {
		if now.Sub(v.at) > slotForget {
			delete(l.byID, k)
		}
	}
}
