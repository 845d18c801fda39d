package emulator

import (
	"encoding/binary"
	"hash/fnv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// bosToken is the id of the beginning-of-text token every prompt starts with, as Llama 3's
// tokenizer prepends <|begin_of_text|> (128000); it makes an empty prompt one token long.
const bosToken uint32 = 128000

// maxPieceRunes is the longest piece one token covers: longer words are cut into pieces of this
// many characters, close to the ~4 characters per token of BPE tokenizers on English text.
const maxPieceRunes = 4

// Tokenize turns text into token ids deterministically: a BOS token, then one token per piece,
// where a piece is a run of letters and digits (cut every maxPieceRunes characters) or a single
// other non-space character; whitespace only separates pieces. A piece's id is the 32-bit FNV-1a
// hash of its bytes. The same text always gives the same tokens, and a text that extends another
// at a piece boundary extends its tokens.
func Tokenize(text string) []uint32 {
	tokens := []uint32{bosToken}
	piece := func(s string) {
		h := fnv.New32a()
		h.Write([]byte(s))
		tokens = append(tokens, h.Sum32())
	}
	start, runes := -1, 0 // current word run
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

// BlockHashes returns the chained hashes of the full blockSize-token blocks of tokens, as vLLM's
// prefix cache keys them: hash i is the FNV-1a 64 of hash i−1 and block i's token ids, finished
// by a splitmix64 mix, so it identifies tokens [0, blockSize·(i+1)). Two prompts share their
// first k hashes exactly when they share their first k full blocks. A partial last block has no
// hash.
func BlockHashes(tokens []uint32, blockSize int) []uint64 {
	if blockSize < 1 {
		return nil
	}
	n := len(tokens) / blockSize
	hashes := make([]uint64, 0, n)
	var prev uint64
	buf := make([]byte, 8+4*blockSize)
	for i := range n {
		binary.LittleEndian.PutUint64(buf, prev)
		for j, t := range tokens[i*blockSize : (i+1)*blockSize] {
			binary.LittleEndian.PutUint32(buf[8+4*j:], t)
		}
		h := fnv.New64a()
		h.Write(buf)
		prev = splitmix.Mix(h.Sum64())
		hashes = append(hashes, prev)
	}
	return hashes
}

// renderChat renders chat messages into one prompt deterministically: "role: content\n" per
// message, in order, then "assistant:" for the reply, like a chat template would end.
func renderChat(msgs []chatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	b.WriteString("assistant:")
	return b.String()
}

// fillerWords are the words generated text cycles through.
var fillerWords = []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit",
	"sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua"}

// fillerToken returns the text of the k-th (1-based) generated token of request id: a space and
// a filler word, chosen deterministically from both.
func fillerToken(id uint64, k int) string {
	return " " + fillerWords[(splitmix.Mix(id)%uint64(len(fillerWords))+uint64(k-1))%uint64(len(fillerWords))]
}
