package faults

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// kind is what one fault does.
type kind int

const (
	kindSwap kind = iota
	kindKill
	kindBadReload
)

// String is the kind's name in the JSON: swap, kill or bad-reload.
func (k kind) String() string {
	switch k {
	case kindSwap:
		return "swap"
	case kindKill:
		return "kill"
	case kindBadReload:
		return "bad-reload"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// planned is one entry of the fault schedule: the N-th fault of its kind, due At after the
// fault window opens.
type planned struct {
	Kind kind
	N    int
	At   time.Duration
}

// schedule spreads swaps, kills and bad reloads evenly over window, interleaved: the i-th of
// c faults of one kind is ranked at (i+u)/c, u seeded in [0.25, 0.75), so every kind covers the
// window evenly and the kinds alternate; the ranked faults then take the centres of len equal
// slots of the window.
func schedule(swaps, kills, badReloads int, window time.Duration, seed uint64) []planned {
	rng := rand.New(rand.NewPCG(seed, 1))
	type ranked struct {
		f    planned
		rank float64
	}
	var all []ranked
	for _, k := range []struct {
		k kind
		n int
	}{{kindSwap, swaps}, {kindKill, kills}, {kindBadReload, badReloads}} {
		for i := range k.n {
			all = append(all, ranked{planned{Kind: k.k, N: i}, (float64(i) + 0.25 + rng.Float64()/2) / float64(k.n)})
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	out := make([]planned, len(all))
	for j, r := range all {
		r.f.At = time.Duration((float64(j) + 0.5) / float64(len(all)) * float64(window))
		out[j] = r.f
	}
	return out
}

// arrivalTimes returns the send times, from the start of the load, of a Poisson stream of rate
// requests per second over d, seeded.
func arrivalTimes(rate float64, d time.Duration, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([]time.Duration, 0, int(rate*d.Seconds()*1.1)+16)
	for t := rng.ExpFloat64() / rate; t < d.Seconds(); t += rng.ExpFloat64() / rate {
		out = append(out, time.Duration(t*float64(time.Second)))
	}
	return out
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
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
