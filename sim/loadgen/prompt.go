package loadgen

import (
	"strings"

	"github.com/foresight-router/foresight/internal/splitmix"
	"github.com/foresight-router/foresight/sim/workload"
)

// wordLetters is the length of every prompt word. A word of at most 4 letters is one token of
// the emulator's tokenizer; three letters and the separating space make 4 characters a token,
// the ratio the router's token estimate (⌈runes/4⌉) assumes, so the router's estimate and its
// 64-character prefix blocks line up with the engine's tokens and 16-token blocks.
const wordLetters = 3

// Prompt renders r's prompt as text with exactly r.InputTokens words, each one token of the
// emulator's tokenizer (so the engine counts InputTokens + 1 with its BOS token): block i of
// r.Blocks becomes 16 words derived from its hash alone, then the InputTokens mod 16 remaining
// tokens become words derived from r.ID. Requests that share their first k block hashes therefore
// share their first 16·k words, and a prefix cache sees the prefix the workload meant. Words are
// lower-case letters separated by single spaces; the same request always renders the same.
func Prompt(r *workload.Request) string {
	n := max(r.InputTokens, 0)
	full := n / workload.BlockSize
	var b strings.Builder
	b.Grow(n * (wordLetters + 1))
	word := 0
	put := func(seed uint64, j int) {
		if word > 0 {
			b.WriteByte(' ')
		}
		x := splitmix.Mix(seed + uint64(j+1)*splitmix.Gamma)
		for range wordLetters {
			b.WriteByte(byte('a' + x%26))
			x /= 26
		}
		word++
	}
	for i := range full {
		seed := splitmix.Mix(r.ID ^ uint64(i)<<32 ^ 0x5bd1e995) // a block the workload did not hash
		if i < len(r.Blocks) {
			seed = r.Blocks[i]
		}
		for j := range workload.BlockSize {
			put(seed, j)
		}
	}
	tail := splitmix.Mix(r.ID + 0x2545f4914f6cdd1d)
	for j := range n - full*workload.BlockSize {
		put(tail, j)
	}
	return b.String()
}
