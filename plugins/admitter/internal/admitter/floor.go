package admitter

import (
	"fmt"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// groupFloor holds, per prefix group, the verdicts of the last window, so that a group whose
// requests the mode keeps shedding — typically a new tenant whose system prompt no server caches
// yet, which a cache-favouring admitter sheds for as long as load stays high (seed 004's
// fairness concern) — still gets a least share of its requests in. A group is keyed by the
// chained hash of its requests' first prefixGroupBlocks prefix blocks (the whole prompt's when
// it is shorter): requests that share a system prompt share it. Not the first block alone: a
// chat template's role marker and the opening words most system prompts share ("You are a
// helpful…") fill it, and every tenant would be one group. Its state
// changes only with the cycles it sees (their now, not the wall clock), so the same cycle
// sequence gives the same verdicts.
type groupFloor struct {
	mu     sync.Mutex
	groups map[uint64]*window
	// swept is the number of groups after the last sweep of idle groups; the next sweep runs
	// when the map has doubled since.
	swept int
}

// window is one group's verdicts within the sliding window, oldest first, from head on.
type window struct {
	verdicts []verdictAt
	head     int
	admitted int // among verdicts[head:]
}

type verdictAt struct {
	at       time.Time
	admitted bool
}

// minSweep is the group count below which idle groups are not swept: a few hundred small
// windows cost nothing.
const minSweep = 512

// apply returns v, or an admission when v rejects c's request, its group's window holds at least
// p.PrefixGroupMinRequests of its requests with this one, and the group's admitted share over the
// window, with this request counted as shed, would fall below p.PrefixGroupFloor; then it records
// the verdict. A request without prefix blocks has no group: v stands.
func (f *groupFloor) apply(c *sdk.Cycle, v sdk.AdmitVerdict, p *Params) sdk.AdmitVerdict {
	hashes := c.Request.PrefixBlockHashes
	if p.PrefixGroupFloor <= 0 || len(hashes) == 0 {
		return v
	}
	key := hashes[min(p.PrefixGroupBlocks, len(hashes))-1] // a chained hash: it stands for every block before it
	span := time.Duration(p.PrefixGroupWindowMs * float64(time.Millisecond))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groups == nil {
		f.groups = map[uint64]*window{}
	}
	w := f.groups[key]
	if w == nil {
		w = &window{}
		f.groups[key] = w
		f.sweep(c.Now, span)
	}
	w.expire(c.Now.Add(-span))
	n := len(w.verdicts) - w.head
	if !v.Admitted && n+1 >= p.PrefixGroupMinRequests && float64(w.admitted) < p.PrefixGroupFloor*float64(n+1) {
		v = yes(fmt.Sprintf("prefix group %016x below its floor: %d of %d admitted in the last %s < %s%% (the mode said: %s)",
			key, w.admitted, n, ms(p.PrefixGroupWindowMs), num(100*p.PrefixGroupFloor), v.Reason))
	}
	w.verdicts = append(w.verdicts, verdictAt{at: c.Now, admitted: v.Admitted})
	if v.Admitted {
		w.admitted++
	}
	return v
}

// expire drops the verdicts before cutoff; it compacts the slice once half of it is dropped.
func (w *window) expire(cutoff time.Time) {
	for w.head < len(w.verdicts) && w.verdicts[w.head].at.Before(cutoff) {
		if w.verdicts[w.head].admitted {
			w.admitted--
		}
		w.head++
	}
	if w.head > len(w.verdicts)/2 {
		w.verdicts = append(w.verdicts[:0], w.verdicts[w.head:]...)
		w.head = 0
	}
}

// sweep forgets the groups with no verdict in the window ending at now, once the map has doubled
// since the last sweep: a forgotten group is the same as an empty window, so verdicts do not
// change, and memory stays bounded by the groups active within a window.
func (f *groupFloor) sweep(now time.Time, span time.Duration) {
	if len(f.groups) < max(minSweep, 2*f.swept) {
		return
	}
	cutoff := now.Add(-span)
	for k, w := range f.groups {
		if last := len(w.verdicts) - 1; last < w.head || w.verdicts[last].at.Before(cutoff) {
			delete(f.groups, k)
		}
	}
	f.swept = len(f.groups)
}
