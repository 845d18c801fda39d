package workload

import (
	"math"
	"slices"
	"testing"
)

// digest folds every field of every request, so two workloads compare in one number.
func digest(w *Workload) uint64 {
	h := uint64(1)
	for _, r := range w.Requests {
		for _, v := range []uint64{r.ID, uint64(r.Arrival), uint64(r.Turn), uint64(r.InputTokens), uint64(r.OutputTokens),
			uint64(len(r.Blocks)), uint64(len(r.OutputBlocks)), uint64(r.Priority), math.Float64bits(r.SLO.TTFTMs)} {
			h = combine(h, v)
		}
		for _, b := range r.Blocks {
			h = combine(h, b)
		}
		for _, b := range r.OutputBlocks {
			h = combine(h, b)
		}
		for _, c := range []byte(r.SessionID) {
			h = combine(h, uint64(c))
		}
	}
	return h
}

// checkBlockCounts asserts the block slices' lengths follow from the token counts.
func checkBlockCounts(t *testing.T, reqs []Request) {
	t.Helper()
	for _, r := range reqs {
		if len(r.Blocks) != r.InputTokens/BlockSize || len(r.Blocks)+len(r.OutputBlocks) != (r.InputTokens+r.OutputTokens)/BlockSize {
			t.Fatalf("request %d: %d+%d blocks for %d+%d tokens", r.ID, len(r.Blocks), len(r.OutputBlocks), r.InputTokens, r.OutputTokens)
		}
	}
}

// checkRate asserts the arrivals' mean rate is rate within 4 standard errors of a Poisson count.
func checkRate(t *testing.T, reqs []Request, rate float64) {
	t.Helper()
	s := Summarize(reqs)
	tol := 4 / math.Sqrt(float64(len(reqs))) // relative standard error of n exponential gaps
	if math.Abs(s.Rate/rate-1) > tol {
		t.Errorf("arrival rate %.4f req/s, want %.4f ± %.1f%%", s.Rate, rate, 100*tol)
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Arrival < reqs[i-1].Arrival {
			t.Fatalf("request %d arrives before request %d", i, i-1)
		}
	}
}

func TestSharedPrefixScenarios(t *testing.T) {
	const n = 12000
	tests := []struct {
		name string
	}{{"A"}, {"B"}, {"C"}, {"D"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := SharedPrefixPresets[tt.name]
			w, err := Scenario(tt.name, Params{Servers: 8, Requests: n, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			reqs := w.Requests
			if len(reqs) != n {
				t.Fatalf("got %d requests, want %d", len(reqs), n)
			}
			checkBlockCounts(t, reqs)
			checkRate(t, reqs, c.RatePerServer*8)

			// Each turn's question length is its input minus the previous turn's prompt+output
			// (minus the system prompt on turn 1); it and the output length must stay within
			// mean ± spread, and touch both bounds (the clamped normal puts ~16% at each).
			type prev struct{ in, out int }
			last := map[string]prev{}
			var qs, os []int
			for _, r := range reqs {
				q := r.InputTokens - c.SystemPromptLen
				if p, ok := last[r.SessionID]; ok {
					q = r.InputTokens - p.in - p.out
				} else if r.Turn != 1 {
					t.Fatalf("request %d: session %s starts at turn %d", r.ID, r.SessionID, r.Turn)
				}
				if r.Turn > c.MaxTurns {
					t.Fatalf("request %d: turn %d beyond MaxTurns %d", r.ID, r.Turn, c.MaxTurns)
				}
				last[r.SessionID] = prev{r.InputTokens, r.OutputTokens}
				qs = append(qs, q)
				os = append(os, r.OutputTokens)
			}
			for _, x := range []struct {
				what string
				got  []int
				d    Dist
			}{{"question", qs, c.Question}, {"output", os, c.Output}} {
				lo, hi := slices.Min(x.got), slices.Max(x.got)
				if lo != x.d.Min || hi != x.d.Max {
					t.Errorf("%s lengths span [%d, %d], want [%d, %d]", x.what, lo, hi, x.d.Min, x.d.Max)
				}
				// A user keeps its lengths on every turn: the sample holds one draw per user
				// visited, so the standard error is StdDev/√users (an upper bound: clamping at
				// ±1σ shrinks the spread to ~0.72σ).
				visited := min(n, c.NumGroups*c.PromptsPerGroup)
				tol := 4 * x.d.StdDev / math.Sqrt(float64(visited))
				if m := mean(x.got); math.Abs(m-x.d.Mean) > tol {
					t.Errorf("%s mean %.1f, want %.1f ± %.1f", x.what, m, x.d.Mean, tol)
				}
			}
		})
	}
}

func mean(xs []int) float64 {
	s := 0.0
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

func TestSharedPrefixStructure(t *testing.T) {
	tests := []struct {
		name     string
		requests int
	}{
		{"A", 8000}, // 6 groups of 1000 users: first turns and some second turns
		{"C", 3000}, // 150 groups of 5 users: four turns each
		{"D", 750},  // exactly one first turn per user
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := SharedPrefixPresets[tt.name]
			w, err := Scenario(tt.name, Params{Requests: tt.requests, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			sysBlocks := c.SystemPromptLen / BlockSize

			// Distinct system prompts: the last block wholly inside the system prompt identifies
			// the group (it chains every system-prompt token before it).
			group := map[uint64]int{}
			for _, r := range w.Requests {
				if _, ok := group[r.Blocks[sysBlocks-1]]; !ok {
					group[r.Blocks[sysBlocks-1]] = len(group)
				}
			}
			if len(group) != c.NumGroups {
				t.Errorf("%d distinct system prompts, want num_groups = %d", len(group), c.NumGroups)
			}

			// Blocks inside the system prompt belong to one group; every later block (prompt or
			// output) to one conversation. So requests of a group share exactly the system
			// prompt's blocks, and requests of different groups share nothing.
			blockGroup := map[uint64]int{}
			blockSession := map[uint64]string{}
			for _, r := range w.Requests {
				g := group[r.Blocks[sysBlocks-1]]
				all := append(slices.Clone(r.Blocks), r.OutputBlocks...)
				for i, b := range all {
					if i < sysBlocks {
						if og, ok := blockGroup[b]; ok && og != g {
							t.Fatalf("system block %d of request %d shared by groups %d and %d", i, r.ID, og, g)
						}
						blockGroup[b] = g
						continue
					}
					if _, ok := blockGroup[b]; ok {
						t.Fatalf("block %d of request %d (past the system prompt) equals a system block", i, r.ID)
					}
					if os, ok := blockSession[b]; ok && os != r.SessionID {
						t.Fatalf("block %d of request %d shared by conversations %s and %s", i, r.ID, os, r.SessionID)
					}
					blockSession[b] = r.SessionID
				}
			}

			// Multi-turn: turn k+1's prompt starts with turn k's prompt+output blocks and adds one
			// question; a user asks questions of one length and gets answers of one length.
			type first struct{ q, out int }
			firsts := map[string]first{}
			prevTurn := map[string]*Request{}
			checked := 0
			for i := range w.Requests {
				r := &w.Requests[i]
				p := prevTurn[r.SessionID]
				prevTurn[r.SessionID] = r
				if p == nil {
					firsts[r.SessionID] = first{r.InputTokens - c.SystemPromptLen, r.OutputTokens}
					continue
				}
				if r.Turn != p.Turn+1 {
					t.Fatalf("session %s: turn %d follows turn %d", r.SessionID, r.Turn, p.Turn)
				}
				want := append(slices.Clone(p.Blocks), p.OutputBlocks...)
				if !slices.Equal(r.Blocks[:len(want)], want) {
					t.Fatalf("session %s turn %d: prompt does not start with turn %d's prompt+output blocks", r.SessionID, r.Turn, p.Turn)
				}
				f := firsts[r.SessionID]
				if q := r.InputTokens - p.InputTokens - p.OutputTokens; q != f.q || r.OutputTokens != f.out {
					t.Fatalf("session %s turn %d: question %d and output %d tokens, the user's are %d and %d", r.SessionID, r.Turn, q, r.OutputTokens, f.q, f.out)
				}
				checked++
			}
			t.Logf("%d distinct system prompts, %d follow-up turns checked", len(group), checked)
			if tt.requests > c.NumGroups*c.PromptsPerGroup && checked == 0 {
				t.Errorf("no follow-up turn checked")
			}
		})
	}
}

func TestSharedPrefixTurnLimits(t *testing.T) {
	tests := []struct {
		name         string
		p            Params
		wantMaxTurn  int
		wantMaxInput int
	}{
		// C has 750 users; 7500 requests give each 10 visits: two 5-turn conversations.
		{"default 5 turns", Params{Requests: 7500}, 5, 0},
		{"unbounded as inference-perf", Params{Requests: 7500, MaxTurns: -1}, 10, 0},
		// With a 20000-token context, a conversation ends before prompt+output exceed it.
		{"context limit", Params{Requests: 7500, MaxTurns: -1, MaxContext: 20000}, 0, 20000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Scenario("C", tt.p)
			if err != nil {
				t.Fatal(err)
			}
			maxTurn, maxCtx := 0, 0
			for _, r := range w.Requests {
				maxTurn = max(maxTurn, r.Turn)
				maxCtx = max(maxCtx, r.InputTokens+r.OutputTokens)
			}
			if tt.wantMaxTurn > 0 && maxTurn != tt.wantMaxTurn {
				t.Errorf("max turn %d, want %d", maxTurn, tt.wantMaxTurn)
			}
			if tt.wantMaxInput > 0 && maxCtx > tt.wantMaxInput {
				t.Errorf("prompt+output reaches %d tokens, limit %d", maxCtx, tt.wantMaxInput)
			}
		})
	}
}

func TestSharedPrefixWithoutMultiTurnRepeatsPrompts(t *testing.T) {
	c := SharedPrefixPresets["C"]
	c.MultiTurn = false
	w, err := SharedPrefix("C-single", c, Params{Requests: 1500, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkBlockCounts(t, w.Requests)
	// 750 users: request i and i+750 are the same user's same prompt (inference-perf cycles
	// through its prompts), with different answers.
	for i := range 750 {
		a, b := w.Requests[i], w.Requests[i+750]
		if !slices.Equal(a.Blocks, b.Blocks) || a.SessionID != "" || a.Turn != 1 {
			t.Fatalf("requests %d and %d: prompts differ or carry a session", i, i+750)
		}
		if len(a.OutputBlocks) > 1 && slices.Equal(a.OutputBlocks, b.OutputBlocks) {
			t.Fatalf("requests %d and %d: identical answers", i, i+750)
		}
	}
	if h := PrefixHitRatio(w.Requests); h < 0.5 {
		t.Errorf("hit ratio %.3f: the second pass should hit every prompt block", h)
	}
}

func TestDeterminism(t *testing.T) {
	for _, name := range []string{"A", "C", "sharegpt", "production"} {
		t.Run(name, func(t *testing.T) {
			p := Params{Servers: 4, Requests: 3000, Seed: 11, Classes: []Class{{Weight: 1, Priority: 1}, {Weight: 1, Priority: -1}}}
			a, err := Scenario(name, p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Scenario(name, p)
			if digest(a) != digest(b) {
				t.Errorf("same seed, different workloads")
			}
			p.Seed = 12
			c, _ := Scenario(name, p)
			if digest(a) == digest(c) {
				t.Errorf("different seeds, same workload")
			}
			// A different seed changes the block hashes, not only the lengths.
			seen := map[uint64]bool{}
			for _, r := range a.Requests {
				for _, b := range r.Blocks {
					seen[b] = true
				}
			}
			for _, r := range c.Requests {
				for _, b := range r.Blocks {
					if seen[b] {
						t.Fatalf("different seeds share block hashes")
					}
				}
			}
		})
	}
}
