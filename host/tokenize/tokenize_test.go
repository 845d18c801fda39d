package tokenize

import (
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// reference is the emulator's tokenizer as first written (sim/emulator before this package):
// pieces cut by range over runes and hashed with hash/fnv. Emulator must agree with it on every
// valid UTF-8 text.
func reference(text string) []uint32 {
	tokens := []uint32{BOS}
	piece := func(s string) {
		h := fnv.New32a()
		h.Write([]byte(s))
		tokens = append(tokens, h.Sum32())
	}
	start, runes := -1, 0
	flush := func(end int) {
		if start >= 0 {
			piece(text[start:end])
		}
		start, runes = -1, 0
	}
	for i, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if runes == maxPieceRunes {
				flush(i)
			}
			if start < 0 {
				start = i
			}
			runes++
		case unicode.IsSpace(r):
			flush(i)
		default:
			flush(i)
			piece(text[i : i+utf8.RuneLen(r)])
		}
	}
	flush(len(text))
	return tokens
}

func TestEmulatorMatchesReference(t *testing.T) {
	for _, text := range []string{
		"", " ", "a", "hello world", "<|user|>\nhi there\n<|assistant|>\n",
		"internationalization 12345678 x-y_z", "naïve café — 東京タワー ١٢٣ Ünïcödé\u00a0nbsp\u0085nel",
		"tabs\tand\vvertical\fform\rfeed", strings.Repeat("abcdefghij ", 50),
	} {
		if got, want := Emulator(nil, text), reference(text); !slices.Equal(got, want) {
			t.Errorf("Emulator(%q) = %v, want %v", text, got, want)
		}
	}
}

func FuzzEmulator(f *testing.F) {
	f.Add("hello, world")
	f.Add("<|system|>\nbe brief\n")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return // prompts are decoded JSON: always valid
		}
		if got, want := Emulator(nil, text), reference(text); !slices.Equal(got, want) {
			t.Fatalf("Emulator(%q) = %v, want %v", text, got, want)
		}
	})
}

func TestEmulatorAppends(t *testing.T) {
	dst := []uint32{7}
	got := Emulator(dst, "ab")
	if len(got) != 3 || got[0] != 7 || got[1] != BOS {
		t.Fatalf("Emulator([7], \"ab\") = %v, want 7, BOS, one piece", got)
	}
}

func TestBlockKeysChain(t *testing.T) {
	tokens := Emulator(nil, strings.Repeat("the quick brown fox jumps over the lazy dog ", 20))
	keys := BlockKeys(nil, 0, tokens, 16)
	if want := len(tokens) / 16; len(keys) != want {
		t.Fatalf("%d keys for %d tokens, want %d", len(keys), len(tokens), want)
	}
	// Continuing the chain from key k−1 over the tokens after block k−1 gives the same keys.
	for k := 1; k < len(keys); k++ {
		if got := BlockKeys(nil, keys[k-1], tokens[16*k:], 16); !slices.Equal(got, keys[k:]) {
			t.Fatalf("BlockKeys from key %d = %v, want %v", k-1, got, keys[k:])
		}
	}
	// A change in block 3 changes key 3 and every later one, not the ones before.
	other := slices.Clone(tokens)
	other[16*3+5]++
	ok := BlockKeys(nil, 0, other, 16)
	if !slices.Equal(ok[:3], keys[:3]) {
		t.Error("keys before the changed block differ")
	}
	for i := 3; i < len(keys); i++ {
		if ok[i] == keys[i] {
			t.Errorf("key %d unchanged after block 3 changed", i)
		}
	}
	if got := BlockKeys(nil, 0, tokens[:15], 16); len(got) != 0 {
		t.Errorf("a partial block has keys %v", got)
	}
	if got := BlockKeys(nil, 0, tokens, 0); len(got) != 0 {
		t.Errorf("block size 0 gives keys %v", got)
	}
}

// BenchmarkEmulator tokenizes a 40,000-character prompt (about 10,000 tokens, a long Mooncake
// prompt) and keys its blocks, as the router does once per request when an endpoint publishes
// KV-cache events.
func BenchmarkEmulator(b *testing.B) {
	text := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit ", 800)[:40000]
	tokens := make([]uint32, 0, 16384)
	keys := make([]uint64, 0, 1024)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tokens = Emulator(tokens[:0], text)
		keys = BlockKeys(keys[:0], 0, tokens, 16)
	}
}
