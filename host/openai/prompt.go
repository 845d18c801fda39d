package openai

import (
	"strings"
	"unicode/utf8"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// generationPrompt is Turn's prefix for "assistant": what a chat template appends to ask for
// the reply.
const generationPrompt = "<|assistant|>\n"

// Turn renders one chat message as it counts for prefix matching: "<|" + role + "|>\n" + content
// + "\n". It is not any model's chat template, only a deterministic stand-in with the property
// that matters: the same conversation always renders the same, and a longer conversation's
// rendering extends a shorter one's.
func Turn(role, content string) string {
	return "<|" + role + "|>\n" + content + "\n"
}

// AnswerText returns the text that a finished response adds to this request's Prompt as the next
// turn's prompt will contain it. For chat that is Turn("assistant", answer) minus the generation
// prompt already at the end of Prompt, so Prompt + AnswerText(answer) is a prefix of the Prompt of
// a follow-up request whose messages are this request's, the assistant's answer, and more. For
// completions it is answer itself (the follow-up prompt is prompt + answer + more). Responses
// are conversations as chat is; embeddings answer no text ("" gives "").
func (r *Request) AnswerText(answer string) string {
	if !r.Kind.conversational() {
		return answer
	}
	return strings.TrimPrefix(Turn("assistant", answer), generationPrompt)
}

// charsPerToken is the heuristic's characters per token: BPE tokenizers (Llama 3, GPT-4's
// cl100k) average about 4 characters per token on English text.
const charsPerToken = 4

// EstimateTokens estimates the token count of text as ceil(runes / 4), at least 1: the ~4
// characters per token of BPE tokenizers on English text. It is cheap and needs no vocabulary;
// code, numbers and non-Latin scripts tokenize denser, so it undercounts those. The scheduler
// only needs it to rank endpoints and price prefill, and the engine's usage block gives the
// exact count afterwards.
func EstimateTokens(text string) int64 {
	n := int64(utf8.RuneCountInString(text))
	return max((n+charsPerToken-1)/charsPerToken, 1)
}

// BlockChars is how many characters make one prefix block: 16 tokens (vLLM's default KV block
// size) × 4 characters per token.
const BlockChars = 16 * charsPerToken

// FNV-1a 64 parameters.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// PrefixBlocks appends to dst the chained hashes of text's full blocks and returns it. Block i
// covers runes [i·BlockChars, (i+1)·BlockChars); a partial last block has no hash. Hash i is the
// FNV-1a 64 of hash i−1 (little-endian; 0 before the first block) followed by block i's bytes,
// finished with splitmix64's mixer, so it identifies runes [0, (i+1)·BlockChars) and is the same
// in every process. Two texts sharing a prefix share the hashes of its full blocks; a difference
// in block k changes hash k and every later one.
func PrefixBlocks(dst []uint64, text string) []uint64 { return appendBlocks(dst, 0, text) }

// ExtendBlocks returns known followed by the hashes of text's full blocks past the first
// len(known): what PrefixBlocks(nil, text) gives when known is PrefixBlocks(nil, p) and text
// starts with p, without hashing p again (a prompt extended by its answer). known's array is
// appended to; pass a clipped slice to keep it.
func ExtendBlocks(known []uint64, text string) []uint64 {
	if len(known) == 0 {
		return appendBlocks(known, 0, text)
	}
	skip, runes := len(text), 0
	for i := range text {
		if runes == len(known)*BlockChars {
			skip = i
			break
		}
		runes++
	}
	return appendBlocks(known, known[len(known)-1], text[skip:])
}

// appendBlocks appends the hashes of text's full blocks, chained from prev.
func appendBlocks(dst []uint64, prev uint64, text string) []uint64 {
	start, runes := 0, 0
	for i := range text { // i is each rune's byte offset; invalid bytes count as one rune each
		if runes == BlockChars {
			prev = blockHash(prev, text[start:i])
			dst = append(dst, prev)
			start, runes = i, 0
		}
		runes++
	}
	if runes == BlockChars {
		dst = append(dst, blockHash(prev, text[start:]))
	}
	return dst
}

// blockHash is FNV-1a 64 of prev's 8 little-endian bytes then block, mixed by splitmix64.
func blockHash(prev uint64, block string) uint64 {
	h := uint64(fnvOffset64)
	for i := range 8 {
		h ^= (prev >> (8 * i)) & 0xff
		h *= fnvPrime64
	}
	for i := 0; i < len(block); i++ {
		h ^= uint64(block[i])
		h *= fnvPrime64
	}
	return splitmix.Mix(h) // FNV's low bits alone are poor, and the prefix index uses hashes as map keys
}
