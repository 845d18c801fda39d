package prefix

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// order returns endpoint's blocks from the most recently used to the least.
func order(x *Index, endpoint string) []uint64 {
	l := x.existing(endpoint)
	if l == nil {
		return nil
	}
	var out []uint64
	for _, i := range l.order.Order(nil) {
		out = append(out, l.hashes[i])
	}
	return out
}

// TestSendFinishIsRecordTwice drives two indexes with the same random history — prompts sent to
// three endpoints and finished in any order, sharing heads so that one request's blocks are
// touched by another's while it runs, answers that do or do not complete blocks, records far too
// small for them, capacities changed and endpoints forgotten and come back between a send and its
// finish — one with Record at the send and Record of prompt + answer at the finish, the other
// with Send and Finish, and checks after every step that both hold the same blocks in the same
// recency order.
func TestSendFinishIsRecordTwice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	chain := func(parent, content uint64) uint64 { return (parent^content)*0x9E3779B97F4A7C15 + 1 }
	grow := func(p []uint64, n int) []uint64 {
		for range n {
			parent := uint64(0)
			if len(p) > 0 {
				parent = p[len(p)-1]
			}
			p = append(p, chain(parent, uint64(rng.IntN(3))))
		}
		return p
	}
	type flight struct {
		endpoint string
		prompt   []uint64
		sent     *Sent
	}
	twice, once := New(40), New(40)
	var running []flight
	for step := range 5000 {
		ep := fmt.Sprint("e", rng.IntN(3))
		switch op := rng.IntN(20); {
		case op < 9: // a prompt is sent: 0 to 30 blocks, often its head shared with a running one
			var p []uint64
			if len(running) > 0 && rng.IntN(2) == 0 {
				base := running[rng.IntN(len(running))].prompt
				p = slices.Clone(base[:rng.IntN(len(base)+1)])
			}
			p = grow(p, rng.IntN(31-len(p)%31))
			twice.Record(ep, p)
			running = append(running, flight{ep, p, once.Send(ep, p)})
		case op < 18 && len(running) > 0: // one finishes, with 0 to 12 answer blocks
			i := rng.IntN(len(running))
			f := running[i]
			running = slices.Delete(running, i, i+1)
			whole := grow(slices.Clone(f.prompt), rng.IntN(13))
			twice.Record(f.endpoint, whole)
			f.sent.Finish(whole[len(f.prompt):])
		case op == 18: // the engine reports another capacity
			c := 1 + rng.IntN(60)
			twice.SetCapacity(ep, c)
			once.SetCapacity(ep, c)
		default: // the fleet changes: ep leaves, to come back with its next request
			keep := slices.DeleteFunc([]string{"e0", "e1", "e2"}, func(e string) bool { return e == ep })
			twice.Retain(keep)
			once.Retain(keep)
		}
		for e := range 3 {
			name := fmt.Sprint("e", e)
			if a, b := order(twice, name), order(once, name); !slices.Equal(a, b) {
				t.Fatalf("step %d, endpoint %s: Record twice leaves %x, Send and Finish %x", step, name, a, b)
			}
		}
	}
}

// TestFinishLooksUpOnlyTheAnswer checks what Finish spares: a prompt of 100 blocks sent, then
// finished with 10 answer blocks, is looked up 100 + 10 times, not 100 + 110 as recording prompt
// + answer again would. After other prompts evicted part of it, only those parts are looked up
// again.
func TestFinishLooksUpOnlyTheAnswer(t *testing.T) {
	seq := func(from, n uint64) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = from + uint64(i)
		}
		return out
	}
	tests := []struct {
		name     string
		capacity int
		between  []uint64 // recorded on the endpoint between Send and Finish
		want     int      // lookups by Send and Finish
	}{
		{"nothing in between", 1000, nil, 100 + 10},
		// 50 others make 100 + 50 = 150 blocks, 30 past capacity 120: the prompt's last 30 (its
		// tail, older than its head) are evicted, and Finish looks those up again.
		{"its tail evicted in between", 120, seq(1000, 50), 100 + 10 + 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(tt.capacity)
			s := x.Send("a", seq(1, 100))
			if len(tt.between) > 0 {
				x.Record("a", tt.between)
			}
			l := x.existing("a")
			before := l.lookups - len(tt.between)
			s.Finish(seq(101, 10))
			if got := l.lookups - len(tt.between); got != tt.want {
				t.Errorf("Send and Finish looked up %d blocks (%d by Send), want %d", got, before, tt.want)
			}
		})
	}
}

// BenchmarkRequest records requests of 14k-token prompts (875 blocks of 16 tokens, the mooncake
// conversation trace's average) with 13-block answers on a full record of 2^16 blocks, ten in
// flight: "record twice" as Record at dispatch and Record of prompt + answer at the end, "send
// and finish" as Send and Finish.
func BenchmarkRequest(b *testing.B) {
	const inFlight, promptBlocks, answerBlocks = 10, 875, 13
	next := uint64(0)
	prompt := func() []uint64 {
		p := make([]uint64, promptBlocks+answerBlocks)
		for i := range p {
			next++
			p[i] = next * 0x9E3779B97F4A7C15
		}
		return p
	}
	for _, mode := range []string{"record twice", "send and finish"} {
		b.Run(mode, func(b *testing.B) {
			x := New(1 << 16)
			for range (1 << 16) / promptBlocks {
				x.Record("a", prompt())
			}
			var flights [inFlight]*Sent
			var wholes [inFlight][]uint64
			i := 0
			for b.Loop() {
				if w := wholes[i]; w != nil {
					if mode == "record twice" {
						x.Record("a", w)
					} else {
						flights[i].Finish(w[promptBlocks:])
					}
				}
				wholes[i] = prompt()
				if mode == "record twice" {
					x.Record("a", wholes[i][:promptBlocks])
				} else {
					flights[i] = x.Send("a", wholes[i][:promptBlocks])
				}
				i = (i + 1) % inFlight
			}
		})
	}
}
