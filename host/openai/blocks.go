package openai

import (
	"slices"
	"unicode/utf8"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// BlockChars is how many characters make one prefix block: 16 tokens (vLLM's default KV block
// size) × 4 characters per token.
const BlockChars = 16 * charsPerToken

// FNV-1a 64 parameters.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Blocks is a text's prefix block hashes together with where their hashing stopped, so that a
// continuation of the text (a prompt's answer) is hashed from there without the text again.
type Blocks struct {
	// Hashes are the chained hashes of text's full blocks. Block i covers runes [i·BlockChars,
	// (i+1)·BlockChars); a partial last block has no hash. Hash i is the FNV-1a 64 of hash i−1
	// (little-endian; 0 before the first block) followed by block i's bytes, finished with
	// splitmix64's mixer, so it identifies runes [0, (i+1)·BlockChars) and is the same in every
	// process. Two texts sharing a prefix share the hashes of its full blocks; a difference in
	// block k changes hash k and every later one. Their slice is clipped: appending to it copies.
	Hashes []uint64
	// tail is text after its last full block: fewer than BlockChars runes.
	tail string
}

// HashBlocks returns text's Blocks.
func HashBlocks(text string) Blocks {
	hashes := appendBlocks(make([]uint64, 0, len(text)/BlockChars), 0, text) // bytes ≥ runes
	return Blocks{Hashes: slices.Clip(hashes), tail: text[tailStart(text, len(hashes)):]}
}

// Extend appends to dst the hashes of the full blocks that text+more has beyond text's own, that
// is HashBlocks(text+more).Hashes[len(b.Hashes):], and returns it. It hashes only text's partial
// last block and more: text is neither scanned again nor copied. That holds whenever text does
// not end inside a UTF-8 sequence that more completes (counted as several invalid runes in text,
// as one rune in text+more), so always for valid UTF-8 text such as every prompt the router
// parses (decoded JSON).
func (b Blocks) Extend(dst []uint64, more string) []uint64 {
	n := blockEnd(more, BlockChars-utf8.RuneCountInString(b.tail))
	if n < 0 {
		return dst // text+more ends inside the block text ended in
	}
	var prev uint64
	if len(b.Hashes) > 0 {
		prev = b.Hashes[len(b.Hashes)-1]
	}
	prev = splitmix.Mix(fnvString(fnvString(fnvPrev(prev), b.tail), more[:n]))
	return appendBlocks(append(dst, prev), prev, more[n:])
}

// tailStart returns the byte offset in text of rune blocks·BlockChars, where hashing blocks full
// blocks stopped.
func tailStart(text string, blocks int) int {
	off := 0
	for range blocks {
		off += blockEnd(text[off:], BlockChars)
	}
	return off
}

// appendBlocks appends the hashes of text's full blocks, chained from prev.
func appendBlocks(dst []uint64, prev uint64, text string) []uint64 {
	for {
		n := blockEnd(text, BlockChars)
		if n < 0 {
			return dst
		}
		prev = blockHash(prev, text[:n])
		dst = append(dst, prev)
		text = text[n:]
	}
}

// asciiBits has the high bit of each of 8 bytes set: a word of ASCII bytes has none of them.
const asciiBits = 0x8080808080808080

// blockEnd returns the byte length of text's first runes runes, or −1 when text has fewer. A run
// of ASCII is 8 bytes to a word; otherwise it counts as range does, an invalid byte as one rune.
func blockEnd(text string, runes int) int {
	if runes == BlockChars && len(text) >= BlockChars {
		var or uint64
		for i := 0; i < BlockChars; i += 8 {
			or |= le64(text[i : i+8])
		}
		if or&asciiBits == 0 {
			return BlockChars
		}
	}
	n := 0
	for i := range text {
		if n == runes {
			return i
		}
		n++
	}
	if n == runes {
		return len(text)
	}
	return -1
}

// le64 is s's first 8 bytes as a little-endian word.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// blockHash is FNV-1a 64 of prev's 8 little-endian bytes then block, mixed by splitmix64.
func blockHash(prev uint64, block string) uint64 {
	return splitmix.Mix(fnvString(fnvPrev(prev), block)) // FNV's low bits alone are poor, and the prefix index uses hashes as map keys
}

// fnvPrev is FNV-1a 64 of prev's 8 little-endian bytes.
func fnvPrev(prev uint64) uint64 {
	h := uint64(fnvOffset64)
	for i := range 8 {
		h ^= (prev >> (8 * i)) & 0xff
		h *= fnvPrime64
	}
	return h
}

// fnvString continues the FNV-1a 64 state h over s's bytes.
func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}
