package chaos

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// Kind is what one fault does.
type Kind int

// The kinds of fault.
const (
	// KindSwap serves the swapped slot with the latency scorer's other strategy.
	KindSwap Kind = iota
	// KindKill SIGKILLs a random plugin process and waits until it serves again.
	KindKill
	// KindBadReload reloads an invalid config, which must be refused.
	KindBadReload
	// KindStop SIGSTOPs a random plugin process, which the router must take for hung, kill and
	// restart.
	KindStop
)

// String is the kind's name in the JSON: swap, kill, bad-reload or stop.
func (k Kind) String() string {
	switch k {
	case KindSwap:
		return "swap"
	case KindKill:
		return "kill"
	case KindBadReload:
		return "bad-reload"
	case KindStop:
		return "stop"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// Planned is one entry of a fault schedule: the N-th fault of its kind, due At after the fault
// window opens.
type Planned struct {
	Kind Kind
	N    int
	At   time.Duration
}

// Counts are how many faults of each kind a schedule holds.
type Counts struct {
	Swaps, Kills, BadReloads, Stops int
}

// Schedule spreads the faults c counts evenly over window, interleaved: the i-th of n faults of
// one kind is ranked at (i+u)/n, u seeded in [0.25, 0.75), so every kind covers the window evenly
// and the kinds alternate; the ranked faults then take the centres of len equal slots of the
// window.
func Schedule(c Counts, window time.Duration, seed uint64) []Planned {
	rng := rand.New(rand.NewPCG(seed, 1))
	type ranked struct {
		f    Planned
		rank float64
	}
	var all []ranked
	for _, k := range []struct {
		k Kind
		n int
	}{{KindSwap, c.Swaps}, {KindKill, c.Kills}, {KindBadReload, c.BadReloads}, {KindStop, c.Stops}} {
		for i := range k.n {
			all = append(all, ranked{Planned{Kind: k.k, N: i}, (float64(i) + 0.25 + rng.Float64()/2) / float64(k.n)})
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	out := make([]Planned, len(all))
	for j, r := range all {
		r.f.At = time.Duration((float64(j) + 0.5) / float64(len(all)) * float64(window))
		out[j] = r.f
	}
	return out
}
