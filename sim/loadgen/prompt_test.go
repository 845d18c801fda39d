package loadgen

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/workload"
)

// sharedTokens is the length of the common prefix of a and b.
func sharedTokens(a, b []uint32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestPromptTokens(t *testing.T) {
	tests := []struct {
		name   string
		input  int
		blocks int
	}{
		{"empty", 0, 0},
		{"under a block", 7, 0},
		{"one block exactly", 16, 1},
		{"blocks and a tail", 16*3 + 5, 3},
		{"blocks missing from the request", 40, 0}, // rendered from the ID instead
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := workload.Request{ID: 9, InputTokens: tt.input, Blocks: make([]uint64, tt.blocks)}
			for i := range r.Blocks {
				r.Blocks[i] = uint64(1000 + i)
			}
			p := Prompt(&r)
			// The emulator counts a BOS token, then one token per word.
			if got, want := len(emulator.Tokenize(p)), tt.input+1; got != want {
				t.Errorf("Tokenize(Prompt) has %d tokens, want InputTokens+1 = %d (prompt %q)", got, want, p)
			}
			if got := len(strings.Fields(p)); got != tt.input {
				t.Errorf("%d words, want %d", got, tt.input)
			}
			// 3 letters and a space per token: the router's ⌈runes/4⌉ estimate is exact.
			if tt.input > 0 && len(p) != 4*tt.input-1 {
				t.Errorf("len = %d, want 4·%d−1", len(p), tt.input)
			}
			if Prompt(&r) != p {
				t.Error("the same request rendered twice differs")
			}
		})
	}
}

// TestPromptSharedBlocks checks that prompts sharing k leading block hashes share the emulator's
// first 16·k+1 tokens (BOS included) and the engine's first k block hashes — the prefix its cache
// would hit — and no more when the next block differs.
func TestPromptSharedBlocks(t *testing.T) {
	w, err := workload.Scenario("A", workload.Params{Servers: 1, Requests: 200, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i := 1; i < len(w.Requests) && checked < 20; i++ {
		a, b := &w.Requests[i-1], &w.Requests[i]
		k := 0
		for k < len(a.Blocks) && k < len(b.Blocks) && a.Blocks[k] == b.Blocks[k] {
			k++
		}
		if k == 0 {
			continue
		}
		checked++
		ta, tb := emulator.Tokenize(Prompt(a)), emulator.Tokenize(Prompt(b))
		if got := sharedTokens(ta, tb); got < 16*k+1 {
			t.Errorf("requests %d and %d share %d blocks but only %d tokens, want >= %d", a.ID, b.ID, k, got, 16*k+1)
		}
		// The engine's blocks start with BOS, so its block k−1 ends at token 16·k: ⌊(16·k+1)/16⌋ = k
		// whole blocks in common.
		ha, hb := emulator.BlockHashes(ta, 16), emulator.BlockHashes(tb, 16)
		if got := sharedTokens64(ha, hb); got < k {
			t.Errorf("requests %d and %d: engine block hashes share %d, want >= %d", a.ID, b.ID, got, k)
		}
	}
	if checked == 0 {
		t.Fatal("scenario A gave no consecutive requests sharing a block")
	}
	// Different first blocks: nothing but BOS in common.
	x := workload.Request{ID: 1, InputTokens: 32, Blocks: []uint64{1, 2}}
	y := workload.Request{ID: 1, InputTokens: 32, Blocks: []uint64{3, 2}}
	if got := sharedTokens(emulator.Tokenize(Prompt(&x)), emulator.Tokenize(Prompt(&y))); got != 1 {
		t.Errorf("prompts with different first blocks share %d tokens, want 1 (BOS)", got)
	}
}

func sharedTokens64(a, b []uint64) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
