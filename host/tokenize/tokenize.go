// Package tokenize turns a prompt into the token ids an engine computes, and token ids into the
// chained block keys a prefix cache is indexed by, so that the router can ask an engine's
// KV-cache events (host/kvevents) which blocks of a request it holds.
//
// The router cannot know an engine's blocks from text alone: an engine caches blocks of
// BlockSize tokens of its own tokenizer, after its own chat template. A Tokenizer reproduces
// both for one family of engines. Emulator is the tokenizer of Foresight's engine emulator
// (sim/emulator), whose chat template is the router's own rendering of a conversation
// (openai.Request.Prompt), so that the emulator's cache is known exactly; a real model's
// tokenizer is another implementation of the same interface.
package tokenize

import (
	"unicode"
	"unicode/utf8"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// BOS is the id of the beginning-of-text token every Emulator tokenization starts with, as
// Llama 3's tokenizer prepends <|begin_of_text|> (128000); it makes an empty prompt one token.
const BOS uint32 = 128000

// maxPieceRunes is the longest piece one Emulator token covers: longer words are cut into pieces
// of this many characters, close to the ~4 characters per token of BPE tokenizers on English.
const maxPieceRunes = 4

// FNV-1a parameters.
const (
	fnv32Offset = 2166136261
	fnv32Prime  = 16777619
	fnv64Offset = 14695981039346656037
	fnv64Prime  = 1099511628211
)

// Emulator appends text's token ids to dst and returns it: BOS, then one token per piece, where
// a piece is a run of letters and digits (cut every 4 characters) or a single other non-space
// character; whitespace only separates pieces. A piece's id is the 32-bit FNV-1a hash of its
// bytes. The same text always gives the same tokens, and a text that extends another at a piece
// boundary extends its tokens. It allocates nothing beyond growing dst.
func Emulator(dst []uint32, text string) []uint32 {
	dst = append(dst, BOS)
	h, runes := uint32(fnv32Offset), 0 // the word piece being hashed, runes of it so far
	flush := func() {
		if runes > 0 {
			dst = append(dst, h)
		}
		h, runes = fnv32Offset, 0
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
				if runes == maxPieceRunes {
					flush()
				}
				h = (h ^ uint32(c)) * fnv32Prime
				runes++
			case c == ' ' || '\t' <= c && c <= '\r':
				flush()
			default:
				flush()
				dst = append(dst, (fnv32Offset^uint32(c))*fnv32Prime)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if runes == maxPieceRunes {
				flush()
			}
			h = fnvBytes32(h, text[i:i+size])
			runes++
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			dst = append(dst, fnvBytes32(fnv32Offset, text[i:i+size]))
		}
		i += size
	}
	flush()
	return dst
}

// fnvBytes32 continues the FNV-1a 32 state h over s's bytes.
func fnvBytes32(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * fnv32Prime
	}
	return h
}

// BlockKeys appends to dst the chained keys of tokens' full blockSize-token blocks, continuing
// the chain from parent (0 for the first block of a prompt), and returns it. Key i is the FNV-1a
// 64 of key i−1's 8 little-endian bytes followed by block i's token ids (4 little-endian bytes
// each), finished with splitmix64's mixer: it identifies the tokens from the start of the prompt
// to the end of block i, so two prompts share their first k keys exactly when they share their
// first k full blocks. A partial last block has no key; blockSize < 1 gives none.
func BlockKeys(dst []uint64, parent uint64, tokens []uint32, blockSize int) []uint64 {
	if blockSize < 1 {
		return dst
	}
	for len(tokens) >= blockSize {
		h := uint64(fnv64Offset)
		for i := range 8 {
			h = (h ^ (parent >> (8 * i) & 0xff)) * fnv64Prime
		}
		for _, t := range tokens[:blockSize] {
			for i := range 4 {
				h = (h ^ uint64(t>>(8*i)&0xff)) * fnv64Prime
			}
		}
		parent = splitmix.Mix(h)
		dst = append(dst, parent)
		tokens = tokens[blockSize:]
	}
	return dst
}
