package openai

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/internal/splitmix"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		text string
		want int64
	}{
		{"", 1},                         // at least 1
		{"a", 1},                        // ceil(1/4)
		{"abcd", 1},                     // 4/4
		{"abcde", 2},                    // ceil(5/4)
		{strings.Repeat("x", 400), 100}, // 400/4
		{"héllo wörld", 3},              // 11 runes (13 bytes): ceil(11/4)
		{"日本語のテキスト", 2},                 // 8 runes: 8/4
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.text); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
	r := &Request{Prompt: "abcdefgh"}
	if r.InputTokens() != 2 {
		t.Errorf("InputTokens = %d, want 2", r.InputTokens())
	}
}

// text returns n runes: the letters of seed repeated.
func text(seed string, n int) string {
	rs := []rune(seed)
	out := make([]rune, n)
	for i := range out {
		out[i] = rs[i%len(rs)]
	}
	return string(out)
}

func TestPrefixBlocks(t *testing.T) {
	base := text("the quick brown fox ", 5*BlockChars) // 5 full blocks
	tests := []struct {
		name string
		a, b string
		// wantA, wantB: block counts; shared: how many leading hashes are equal.
		wantA, wantB, shared int
	}{
		{"identical", base, base, 5, 5, 5},
		{"partial tail block ignored", base + "tail", base, 5, 5, 5},
		{"one rune short of a block", base[:2*BlockChars-1], base, 1, 5, 1},
		{"extension shares every full block", base[:2*BlockChars+10], base, 2, 5, 2},
		{"change in block 3 changes blocks 3 and later only", base, base[:3*BlockChars+5] + "X" + base[3*BlockChars+6:], 5, 5, 3},
		{"change in the first rune changes every block", "Z" + base[1:], base, 5, 5, 0},
		{"empty", "", base, 0, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := PrefixBlocks(nil, tt.a), PrefixBlocks(nil, tt.b)
			if len(a) != tt.wantA || len(b) != tt.wantB {
				t.Fatalf("block counts %d, %d, want %d, %d", len(a), len(b), tt.wantA, tt.wantB)
			}
			shared := 0
			for shared < min(len(a), len(b)) && a[shared] == b[shared] {
				shared++
			}
			if shared != tt.shared {
				t.Errorf("%d leading hashes shared, want %d", shared, tt.shared)
			}
			for i := shared; i < min(len(a), len(b)); i++ {
				if a[i] == b[i] {
					t.Errorf("hash %d equal after the texts differ", i)
				}
			}
		})
	}
}

func TestPrefixBlocksRunes(t *testing.T) {
	// Blocks are counted in runes: 64 three-byte runes are one block, not three.
	cjk := text("日本語のテキスト", BlockChars)
	if got := len(PrefixBlocks(nil, cjk)); got != 1 {
		t.Errorf("%d runes (%d bytes) made %d blocks, want 1", BlockChars, len(cjk), got)
	}
	if got := len(PrefixBlocks(nil, text("日本語のテキスト", BlockChars-1))); got != 0 {
		t.Errorf("%d runes made %d blocks, want 0", BlockChars-1, got)
	}
	// A block boundary inside a multi-byte text: both texts share block 0, differ in block 1.
	a := text("é", BlockChars) + text("ü", BlockChars)
	b := text("é", BlockChars) + text("ö", BlockChars)
	ha, hb := PrefixBlocks(nil, a), PrefixBlocks(nil, b)
	if len(ha) != 2 || ha[0] != hb[0] || ha[1] == hb[1] {
		t.Errorf("hashes %x and %x: want 2 blocks, the first shared", ha, hb)
	}
}

func TestPrefixBlocksDefinition(t *testing.T) {
	// Hash i is splitmix64(FNV-1a 64(LE(hash i−1) ‖ block i)), hash −1 = 0: pinned against hash/fnv
	// so another process (or language) can reproduce it.
	s := text("abcdefghij", 3*BlockChars)
	var want []uint64
	var prev uint64
	for i := range 3 {
		h := fnv.New64a()
		h.Write(binary.LittleEndian.AppendUint64(nil, prev))
		h.Write([]byte(s[i*BlockChars : (i+1)*BlockChars]))
		prev = splitmix.Mix(h.Sum64())
		want = append(want, prev)
	}
	if got := PrefixBlocks(nil, s); !slices.Equal(got, want) {
		t.Errorf("PrefixBlocks = %x, want %x", got, want)
	}
	// dst is appended to, not overwritten.
	dst := PrefixBlocks([]uint64{42}, s)
	if len(dst) != 4 || dst[0] != 42 || !slices.Equal(dst[1:], want) {
		t.Errorf("PrefixBlocks(dst) = %x", dst)
	}
}

// TestFollowUp checks that what a finished response adds to the prompt is how the next turn's
// prompt begins, so the blocks recorded after a response are a prefix of the follow-up's blocks.
func TestFollowUp(t *testing.T) {
	long := text("a long system prompt about routing ", 3*BlockChars+7)
	answer := "Sure. " + text("here is a detailed answer ", 2*BlockChars)
	type msg struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	chat := func(msgs ...msg) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		return string(b)
	}
	completion := func(prompt string) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "prompt": prompt})
		return string(b)
	}
	first := []msg{{"system", long}, {"user", "What is prefix caching?"}}
	tests := []struct {
		name     string
		kind     Kind
		first    string
		followUp string
	}{
		{"chat", Chat, chat(first...), chat(append(first, msg{"assistant", answer}, msg{"user", "And why?"})...)},
		{"chat, answer given back as text parts", Chat, chat(first...),
			chat(append(first, msg{"assistant", []map[string]string{{"type": "text", "text": answer[:9]}, {"type": "text", "text": answer[9:]}}},
				msg{"user", "And why?"})...)},
		{"chat, multi-byte answer", Chat, chat(msg{"user", "Écris en français"}),
			chat(msg{"user", "Écris en français"}, msg{"assistant", "Très bien — " + answer}, msg{"user", "Merci"})},
		{"completions", Completions, completion(long), completion(long + answer + " and more text")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.kind, []byte(tt.first))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Parse(tt.kind, []byte(tt.followUp))
			if err != nil {
				t.Fatal(err)
			}
			ans := answer
			if strings.Contains(tt.followUp, "Très bien") {
				ans = "Très bien — " + answer
			}
			done := a.Prompt + a.AnswerText(ans)
			if !strings.HasPrefix(b.Prompt, done) {
				t.Fatalf("follow-up prompt\n%q\ndoes not start with prompt + answer\n%q", b.Prompt, done)
			}
			ha, hb := PrefixBlocks(nil, done), PrefixBlocks(nil, b.Prompt)
			if len(ha) == 0 || !slices.Equal(ha, hb[:len(ha)]) {
				t.Errorf("blocks of prompt + answer %x are not a prefix of the follow-up's %x", ha, hb)
			}
		})
	}
}

// TestBlocksExtend checks that Extend continues a prompt's hashes over its answer exactly as
// hashing the concatenation does, from where the prompt's hashing stopped: prompts ending mid-block
// and on a block boundary, ASCII ones (hashed a word at a time) and ones whose multi-byte or invalid
// runes straddle a block's end, answers that do not finish the prompt's last block.
func TestBlocksExtend(t *testing.T) {
	long := text("answer ", 5*BlockChars+3) // 5 blocks and 3 runes
	tests := []struct {
		name   string
		prompt string
		more   []string
	}{
		{"empty prompt", "", []string{"", "x", long}},
		{"ASCII, mid-block", text("hello world ", 2*BlockChars+7), []string{"", "x", text("y", BlockChars-7), long}},
		{"ASCII, on a boundary", text("hello world ", 3*BlockChars), []string{"", "x", text("y", BlockChars), long}},
		{"multi-byte, mid-block", text("héllo wörld ", 2*BlockChars+10), []string{"", "é", text("日本", 54), text("日本", 55), long}},
		{"multi-byte, on a boundary", text("héllo wörld ", BlockChars), []string{"", "😀", long}},
		{"a rune across a block's 64th byte", strings.Repeat("a", BlockChars-1) + "é" + text("b", BlockChars), []string{"", long}},
		{"invalid bytes inside the prompt", "\xff\xfe" + text("ab", BlockChars+5), []string{"", "\xff", long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := HashBlocks(tt.prompt)
			if want := PrefixBlocks(nil, tt.prompt); !slices.Equal(b.Hashes, want) {
				t.Fatalf("HashBlocks(%q).Hashes = %x, want PrefixBlocks %x", tt.prompt, b.Hashes, want)
			}
			for _, more := range tt.more {
				whole := PrefixBlocks(nil, tt.prompt+more)
				if got := b.Extend(nil, more); !slices.Equal(got, whole[len(b.Hashes):]) {
					t.Errorf("Extend(%q) = %x, want the concatenation's blocks past the prompt's, %x", more, got, whole[len(b.Hashes):])
				}
				if got := b.Extend([]uint64{7}, more); got[0] != 7 || len(got) != 1+len(whole)-len(b.Hashes) {
					t.Errorf("Extend([7], %q) = %x: dst's entries not kept, or the wrong count", more, got)
				}
			}
		})
	}
}
