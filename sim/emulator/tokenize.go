package emulator

import (
	"strings"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/tokenize"
	"github.com/foresight-router/foresight/internal/splitmix"
)

// Tokenize turns text into the emulator's token ids: tokenize.Emulator's (a BOS token, then one
// token per word piece of at most 4 characters or other non-space character). The router's
// "emulator" tokenizer is the same function, so it knows exactly which blocks a prompt fills.
func Tokenize(text string) []uint32 { return tokenize.Emulator(nil, text) }

// BlockHashes returns the chained hashes of the full blockSize-token blocks of tokens, which the
// engine's prefix cache keys them by and its KV-cache events name: tokenize.BlockKeys from the
// start of a prompt. Two prompts share their first k hashes exactly when they share their first
// k full blocks; a partial last block has no hash.
func BlockHashes(tokens []uint32, blockSize int) []uint64 {
	return tokenize.BlockKeys(nil, 0, tokens, blockSize)
}

// renderChat renders chat messages into one prompt as the router does (openai.Request.Prompt):
// openai.Turn per message, in order, then the generation prompt, like a chat template would end.
// The emulator's chat template is the router's rendering so that a router tokenizing a request's
// Prompt with Tokenize gets the very tokens the emulator computes.
func renderChat(msgs []chatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(openai.Turn(m.Role, m.Content))
	}
	b.WriteString(openai.GenerationPrompt)
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
