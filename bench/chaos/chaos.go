// Package chaos performs faults on a running router through its admin API, as an operator's
// mistakes and a machine's accidents would: a stage swapped for an equivalent plugin
// (PUT /admin/stages), a plugin process SIGKILLed or frozen (SIGSTOP), an invalid config
// reloaded. [Schedule] spreads them over a window, seeded; a [Faulter] performs them one at a
// time and says how each went ([Event]). bench faults and bench soak share it: the first to see
// what faults cost the requests in flight, the second to see that a long run of them leaks
// nothing. A [Truncator] is a fault of a server's: a proxy in front of it that ends some of its
// streams early, cleanly, without their data: [DONE].
package chaos

import (
	"context"
	"time"

	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/internal/filewatch"
)

const (
	// SwapSlot is the slot the swaps serve alternately with two scorer configurations.
	SwapSlot = "scorers.0"
	// restartTimeout bounds the wait for a killed plugin to serve again.
	restartTimeout = 30 * time.Second
	// restartPoll is how often GET /admin/pipeline is asked whether a killed plugin is back.
	restartPoll = 10 * time.Millisecond
	// settle is how long a restored config file is left for the router's file watcher to
	// reload it (its debounce and the reload) before the next fault.
	settle = filewatch.Debounce + 300*time.Millisecond
)

// Event is one fault as performed.
type Event struct {
	AtMs   float64 `json:"at_ms"` // since the load began
	Kind   string  `json:"kind"`  // swap, kill, bad-reload or stop
	OK     bool    `json:"ok"`    // performed as intended (see Tally)
	TookMs float64 `json:"took_ms"`
	Detail string  `json:"detail,omitempty"`
}

// Tally counts the faults of each kind that were performed as intended — a swap answered 200; a
// killed plugin served again with a new pid; a bad reload answered 422 and left the generation
// as it was; a stopped plugin was killed by the router and served again with a new pid — and
// those that were not.
type Tally struct {
	Swaps, SwapFailures           int
	Kills, KillFailures           int
	BadReloads, BadReloadFailures int
	Stops, StopFailures           int
}

// Count tallies events.
func Count(events []Event) Tally {
	var t Tally
	for _, ev := range events {
		var ok, failed *int
		switch ev.Kind {
		case KindSwap.String():
			ok, failed = &t.Swaps, &t.SwapFailures
		case KindKill.String():
			ok, failed = &t.Kills, &t.KillFailures
		case KindBadReload.String():
			ok, failed = &t.BadReloads, &t.BadReloadFailures
		case KindStop.String():
			ok, failed = &t.Stops, &t.StopFailures
		default:
			continue
		}
		if ev.OK {
			*ok++
		} else {
			*failed++
		}
	}
	return t
}

// Run performs plan, each fault due at began+offset+its At (one due while the one before it is
// still under way waits for it), until the plan or ctx ends, and returns the events, timed from
// began.
func (f *Faulter) Run(ctx context.Context, plan []Planned, began time.Time, offset time.Duration) []Event {
	var events []Event
	for _, pf := range plan {
		openloop.SleepUntil(ctx, began.Add(offset+pf.At))
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		ev := f.perform(ctx, pf)
		ev.AtMs = ms(start.Sub(began))
		events = append(events, ev)
	}
	return events
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
