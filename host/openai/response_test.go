package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadWhole(t *testing.T) {
	tests := []struct {
		name   string
		kind   Kind
		body   string
		answer string
		usage  *Usage
		err    string
	}{
		{"completion", Completions,
			`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" lorem ipsum","logprobs":null,"finish_reason":"length"}],` +
				`"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4}}}`,
			" lorem ipsum", &Usage{PromptTokens: 9, CompletionTokens: 2, CachedTokens: 4}, ""},
		{"chat", Chat,
			`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,"prompt_tokens_details":null}}`,
			"Hi there", &Usage{PromptTokens: 20, CompletionTokens: 3}, ""},
		{"chat, choice 0 listed second", Chat,
			`{"choices":[{"index":1,"message":{"content":"B"}},{"index":0,"message":{"content":"A"}}]}`, "A", nil, ""},
		{"chat, tool call without content", Chat,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`,
			"", &Usage{PromptTokens: 5, CompletionTokens: 7}, ""},
		{"embeddings: no answer, prompt tokens only", Embeddings,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"model":"e","usage":{"prompt_tokens":7,"total_tokens":7}}`,
			"", &Usage{PromptTokens: 7}, ""},
		// The output_text parts of message items, in order; a reasoning item's text is not the answer.
		{"responses: output text and usage", Responses,
			`{"id":"resp_1","object":"response","model":"r","status":"completed","output":[` +
				`{"type":"reasoning","id":"rs_1","content":[{"type":"reasoning_text","text":"hmm"}]},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hel","annotations":[]},{"type":"refusal","refusal":"no"},{"type":"output_text","text":"lo"}]},` +
				`{"type":"function_call","name":"f","arguments":"{}"},{"type":"message","content":"odd: a string"},` +
				`{"type":"message","content":[{"type":"output_text","text":"!"}]}],` +
				`"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":16},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":35}}`,
			"Hello!", &Usage{PromptTokens: 30, CompletionTokens: 5, CachedTokens: 16}, ""},
		{"responses: no cached-token detail", Responses, `{"object":"response","output":[],"usage":{"input_tokens":3,"output_tokens":0}}`,
			"", &Usage{PromptTokens: 3}, ""},
		{"responses: an error body has neither", Responses, `{"error":{"message":"bad","type":"invalid_request_error"}}`, "", nil, ""},
		{"responses: not JSON", Responses, `upstream connect error`, "", nil, "decoding responses response"},
		{"an error body has neither", Completions, `{"error":{"message":"bad","type":"invalid_request_error"}}`, "", nil, ""},
		{"not JSON", Chat, `<html>502</html>`, "", nil, "decoding chat response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer, usage, err := ReadWhole(tt.kind, []byte(tt.body))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if answer != tt.answer {
				t.Errorf("answer %q, want %q", answer, tt.answer)
			}
			if diff := cmp.Diff(tt.usage, usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name   string
		err    *Error
		status int
		want   string
	}{
		{"bad request naming a field", BadRequest("max_tokens", "max_tokens must be a non-negative integer, got %d", -1), 400,
			`{"error":{"message":"max_tokens must be a non-negative integer, got -1","type":"invalid_request_error","param":"max_tokens","code":null}}`},
		{"shed", &Error{Status: 429, Type: TypeRateLimit, Message: "no endpoint can meet the TTFT objective", Code: "slo_unattainable"}, 429,
			`{"error":{"message":"no endpoint can meet the TTFT objective","type":"rate_limit_exceeded","param":null,"code":"slo_unattainable"}}`},
		{"status and type default to a server error", &Error{Message: "boom <&>"}, 500,
			`{"error":{"message":"boom \u003c\u0026\u003e","type":"server_error","param":null,"code":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteError(w, tt.err)
			if w.Code != tt.status {
				t.Errorf("status %d, want %d", w.Code, tt.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := strings.TrimSpace(w.Body.String()); got != tt.want {
				t.Errorf("body\n%s\nwant\n%s", got, tt.want)
			}
			var body struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body.Error) != 4 {
				t.Errorf("body %s is not {\"error\":{4 fields}}: %v", w.Body, err)
			}
		})
	}
	e := BadRequest("x-llm-d-slo-ttft-ms", "bad")
	if e.Error() != "bad" || e.Status != http.StatusBadRequest || e.Type != TypeInvalidRequest || e.Param != "x-llm-d-slo-ttft-ms" {
		t.Errorf("BadRequest = %+v", e)
	}
}

// TestWriteStreamError: the event that ends a broken stream is the one each API's clients raise
// as an error: data: {"error":…} for completions and chat, event: error with data:
// {"type":"error",…} for Responses; after a partial event a blank line ends it first.
func TestWriteStreamError(t *testing.T) {
	e := &Error{Status: 502, Type: TypeServer, Code: "upstream_stream_broken", Message: "cut"}
	for _, tc := range []struct {
		kind    Kind
		partial bool
		want    string
	}{
		{Chat, false, `data: {"error":{"message":"cut","type":"server_error","param":null,"code":"upstream_stream_broken"}}` + "\n\n"},
		{Completions, true, "\n\n" + `data: {"error":{"message":"cut","type":"server_error","param":null,"code":"upstream_stream_broken"}}` + "\n\n"},
		{Responses, false, "event: error\n" + `data: {"type":"error","code":"upstream_stream_broken","message":"cut","param":null}` + "\n\n"},
		{Responses, true, "\n\nevent: error\n" + `data: {"type":"error","code":"upstream_stream_broken","message":"cut","param":null}` + "\n\n"},
	} {
		var b strings.Builder
		if err := WriteStreamError(&b, tc.kind, e, tc.partial); err != nil || b.String() != tc.want {
			t.Errorf("%v (partial %v): %q, %v; want %q", tc.kind, tc.partial, b.String(), err, tc.want)
		}
	}
}
