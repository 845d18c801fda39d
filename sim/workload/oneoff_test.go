package workload

import (
	"math"
	"testing"
)

// One-off requests share no block with any other request and belong to no group; the others
// keep their groups (numbered from 1), and the same seed gives the same workload.
func TestOneOffRequests(t *testing.T) {
	const n = 3000
	c := SharedPrefixConfig{NumGroups: 4, PromptsPerGroup: 50, SystemPromptLen: 256,
		Question: Spread(128, 32), Output: Spread(32, 8), RatePerServer: 10, OneOffShare: 2.0 / 3}
	p := Params{Servers: 2, Requests: n, Seed: 5}
	w, err := SharedPrefix("one-off", c, p)
	if err != nil {
		t.Fatal(err)
	}
	checkBlockCounts(t, w.Requests)
	firstBlock := map[uint64]int{} // how many requests start with each block
	for _, r := range w.Requests {
		firstBlock[r.Blocks[0]]++
	}
	oneOff := 0
	groupOf := map[uint64]int{}
	for i, r := range w.Requests {
		switch {
		case r.Group == 0:
			oneOff++
			if firstBlock[r.Blocks[0]] != 1 {
				t.Fatalf("one-off request %d shares its first block with %d others", i, firstBlock[r.Blocks[0]]-1)
			}
		case r.Group < 1 || r.Group > c.NumGroups:
			t.Fatalf("request %d: group %d, want 1–%d", i, r.Group, c.NumGroups)
		default:
			if g, seen := groupOf[r.Blocks[0]]; seen && g != r.Group {
				t.Fatalf("request %d: group %d, and its system prompt is group %d's", i, r.Group, g)
			}
			groupOf[r.Blocks[0]] = r.Group
		}
	}
	// 2/3 of 3,000: 2,000, binomial sd √(3000·2/3·1/3) ≈ 25.8.
	if math.Abs(float64(oneOff)-2000) > 4*25.8 {
		t.Errorf("%d one-off requests, want 2000 ± 103", oneOff)
	}
	if len(groupOf) != c.NumGroups {
		t.Errorf("%d group system prompts, want %d", len(groupOf), c.NumGroups)
	}
	again, err := SharedPrefix("one-off", c, p)
	if err != nil || digest(again) != digest(w) {
		t.Errorf("the same seed gave another workload (%v)", err)
	}
	c.MultiTurn = true
	if _, err := SharedPrefix("one-off", c, p); err == nil {
		t.Error("one-off requests in a multi-turn workload were accepted")
	}
	c.MultiTurn, c.OneOffShare = false, 1
	if _, err := SharedPrefix("one-off", c, p); err == nil {
		t.Error("a one-off share of 1 was accepted")
	}
}
