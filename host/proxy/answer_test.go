package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/sim/emulator"
)

// TestAnswerIsRecordedAfterThePrompt sends one chat request, streamed or not, to a one-endpoint
// fleet and checks that the endpoint's prefix index then holds exactly the blocks of the prompt
// followed by the answer as the next turn renders it: the prompt's recorded at dispatch, the
// answer's hashed on from where the prompt's stopped.
func TestAnswerIsRecordedAfterThePrompt(t *testing.T) {
	question := strings.Repeat("Tell me about the rivers of Europe, one by one. ", 8) // 384 runes: 6 blocks and more
	body := func(stream bool) string {
		b := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"` + question + `"}],"max_tokens":60`
		if stream {
			b += `,"stream":true`
		}
		return b + "}"
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole answer", true: "streamed"}[stream], func(t *testing.T) {
			f := newFixture(t, 1)
			code, _, resp := f.post(t, "/v1/chat/completions", body(stream))
			if code != 200 {
				t.Fatalf("status %d: %s", code, resp)
			}
			answer := answerText(t, resp, stream)
			req, err := openai.Parse(openai.Chat, []byte(body(stream)))
			if err != nil {
				t.Fatal(err)
			}
			want := openai.HashBlocks(req.Prompt + req.AnswerText(answer)).Hashes
			if prompt := openai.HashBlocks(req.Prompt).Hashes; len(want) <= len(prompt) {
				t.Fatalf("answer %q completes no block past the prompt's %d: the test shows nothing", answer, len(prompt))
			}
			waitFor(t, "the answer's blocks recorded", func() bool { return f.srv.prefix.Len("vllm-0") == len(want) })
			if got := f.srv.prefix.Match("vllm-0", want); got != len(want) {
				t.Errorf("the index holds %d of the %d blocks of prompt + answer", got, len(want))
			}
		})
	}
}

// answerText is the content of a chat response, whole or streamed.
func answerText(t *testing.T, resp string, stream bool) string {
	t.Helper()
	type choice struct {
		Message, Delta struct{ Content string }
	}
	var out strings.Builder
	for _, data := range strings.Split(resp, "\n") {
		if stream {
			var ok bool
			if data, ok = strings.CutPrefix(data, "data: "); !ok || data == "[DONE]" {
				continue
			}
		}
		var r struct{ Choices []choice }
		if strings.TrimSpace(data) == "" {
			continue
		}
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatalf("decoding %q: %v", data, err)
		}
		for _, c := range r.Choices {
			out.WriteString(c.Message.Content + c.Delta.Content)
		}
	}
	return out.String()
}
