package openai

import (
	"strings"
	"unicode/utf8"
)

// GenerationPrompt is Turn's prefix for "assistant": what a chat template appends to ask for
// the reply.
const GenerationPrompt = "<|assistant|>\n"

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
	return strings.TrimPrefix(Turn("assistant", answer), GenerationPrompt)
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
