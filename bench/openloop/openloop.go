// Package openloop sends a bench's requests open loop: each at its arrival time, drawn from a
// seeded Poisson process, whether or not the ones before it have been answered, so that a slow
// router meets the load a fleet's clients would send rather than one that slows down with it.
// bench faults and bench soak load the router with it; what a request is and how its answer is
// judged is theirs. It also holds the few words they share for describing a failed request.
package openloop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
)

// Arrivals returns the send times, from the start of the load, of a Poisson stream of rate
// requests per second over d, seeded.
func Arrivals(rate float64, d time.Duration, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([]time.Duration, 0, int(rate*d.Seconds()*1.1)+16)
	for t := rng.ExpFloat64() / rate; t < d.Seconds(); t += rng.ExpFloat64() / rate {
		out = append(out, time.Duration(t*float64(time.Second)))
	}
	return out
}

// Run sends the requests: it calls send(ctx, n) at began+arrivals[n] for every n, each call on a
// goroutine of its own (a late arrival at once). An arrival that finds maxInFlight calls
// running, or comes after ctx ended, is not sent: skip(n, reason) is called in its place, with
// the reason starting "not sent: ". Run returns, with the number of calls to send, once every
// call has returned; send and skip may run at the same time.
func Run(ctx context.Context, began time.Time, arrivals []time.Duration, maxInFlight int,
	send func(ctx context.Context, n int), skip func(n int, reason string)) int {
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	sent := 0
	for n, at := range arrivals {
		SleepUntil(ctx, began.Add(at))
		if ctx.Err() != nil {
			skip(n, "not sent: the bench was stopped")
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			skip(n, fmt.Sprintf("not sent: %d requests in flight", maxInFlight))
			continue
		}
		sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			send(ctx, n)
		}()
	}
	wg.Wait()
	return sent
}

// SleepUntil sleeps until t or until ctx ends.
func SleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// ErrorMessage returns an OpenAI error body's message, else the body's start, clipped to 200
// bytes.
func ErrorMessage(body []byte) string { return Clip(loadgen.ErrorText(body), 200) }

// TransportError returns err without the method and URL an *url.Error repeats, clipped to 200
// bytes.
func TransportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return Clip(err.Error(), 200)
}

// Clip returns s with its runs of white space made single spaces, cut to n bytes with an
// ellipsis.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
