package proxy

import (
	"sync"
	"time"
)

// warnings bounds a warning that a client's value can repeat: it says whether a name is seen for
// the first time in the current period (a minute), and remembers at most maxNames names a
// period, so that a client inventing a name per request costs neither memory nor log lines
// beyond that. The zero value is ready to use.
type warnings struct {
	mu    sync.Mutex
	start time.Time // the current period's
	seen  map[string]bool
}

// warningPeriod and maxNames bound warnings.
const (
	warningPeriod = time.Minute
	maxNames      = 100
)

// first reports whether name is new in the period that holds now: the caller warns then.
func (w *warnings) first(name string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil || now.Sub(w.start) >= warningPeriod {
		w.start, w.seen = now, map[string]bool{}
	}
	if w.seen[name] || len(w.seen) >= maxNames {
		return false
	}
	w.seen[name] = true
	return true
}
