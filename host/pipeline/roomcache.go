package pipeline

import (
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// roomCacheFor bounds how long a detector's verdict on an endpoint is reused: the router's default
// scrape interval, so that a verdict lives no longer than the gauges it judged would, even on an
// endpoint whose scrapes stopped.
const roomCacheFor = 50 * time.Millisecond

// roomCache answers a state-only detector plugin's decisions from its last verdict on each
// endpoint, so that the plugin is asked about an endpoint about once a scrape rather than once a
// decision, and only about the endpoints scraped since. A detector's room is a count of the
// router's requests an endpoint takes before it is full (detector.proto); the cache keeps it with
// the endpoint's dispatched_since_scrape at the time and, until the endpoint's next scrape,
// answers the count less the requests sent there since — those the router sent, less those of
// them that finished, exactly as the cycle's dispatched_since_scrape moves. A finish of a request
// sent before the scrape gives no room back until the next verdict: the cache errs towards full.
// Only a detector that reads nothing but endpoint state is cached: its verdict on an endpoint
// then depends on that endpoint's state alone, so it may be asked about any subset of them.
type roomCache struct {
	mu   sync.Mutex
	byID map[string]roomEntry
}

type roomEntry struct {
	scrapedAt time.Time // the scrape the verdict judged: the cycle's now less the metrics' age
	at        time.Time // the verdict's cycle time
	room      int
	sent      int64 // the endpoint's dispatched_since_scrape at the verdict
	slots     int   // the slots the verdict reported for it; 0: none
}

// stateOnly reports whether a detector with these reads judges by endpoint state alone: it
// declares its reads, and all are endpoint columns other than the predictions.
func stateOnly(reads []string) bool {
	for _, r := range reads {
		if !strings.HasPrefix(r, "endpoints.") || r == "endpoints.predictions" {
			return false
		}
	}
	return len(reads) > 0
}

func scrapedAt(c *sdk.Cycle, s *sdk.EndpointState) time.Time {
	return c.Now.Add(-time.Duration(s.MetricsAgeMs * float64(time.Millisecond)))
}

// lookup answers c's endpoints from the cache: room holds one count per endpoint, slots the slots
// reported with them (nil when none was), and missed the indices of those without an entry for
// their current scrape, or with one older than roomCacheFor (their counts are 0 until the caller
// fills them).
func (rc *roomCache) lookup(c *sdk.Cycle) (room, slots, missed []int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	room = make([]int, len(c.Endpoints))
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		en, hit := rc.byID[e.ID]
		// Within a millisecond: the age travels as float milliseconds.
		if !hit || c.Now.Sub(en.at) > roomCacheFor || en.scrapedAt.Sub(scrapedAt(c, &e.State)).Abs() > time.Millisecond {
			missed = append(missed, i)
			continue
		}
		room[i] = max(en.room-int(e.State.DispatchedSinceScrape-en.sent), 0)
		if en.slots > 0 {
			if slots == nil {
				slots = make([]int, len(c.Endpoints))
			}
			slots[i] = en.slots
		}
	}
	return room, slots, missed
}

// store keeps v, the detector's verdict on c.
func (rc *roomCache) store(c *sdk.Cycle, v sdk.SaturationVerdict) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.byID == nil {
		rc.byID = make(map[string]roomEntry, len(c.Endpoints))
	}
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		en := roomEntry{scrapedAt: scrapedAt(c, &e.State), at: c.Now, room: v.Room[i], sent: e.State.DispatchedSinceScrape}
		if len(v.Slots) == len(c.Endpoints) {
			en.slots = v.Slots[i]
		}
		rc.byID[e.ID] = en
	}
}
