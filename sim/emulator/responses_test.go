package emulator

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// responseAnswer decodes a Responses API response object.
type responseAnswer struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Model     string `json:"model"`
	Status    string `json:"status"`
	Output    []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		Status  string `json:"status"`
		Content []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
	} `json:"output"`
	Usage *responseUsage `json:"usage"`
}

// check reports how a completed response with the given prompt and output length differs from
// the expected shape and usage.
func (a responseAnswer) check(t *testing.T, prompt string, n int) {
	t.Helper()
	if a.Object != "response" || !strings.HasPrefix(a.ID, "resp_") || a.CreatedAt == 0 || a.Model != DefaultModel || a.Status != "completed" {
		t.Errorf("response = %+v, want a completed response of model %q", a, DefaultModel)
	}
	if len(a.Output) != 1 || len(a.Output[0].Content) != 1 {
		t.Fatalf("output = %+v, want one message of one part", a.Output)
	}
	msg, part := a.Output[0], a.Output[0].Content[0]
	if msg.Type != "message" || !strings.HasPrefix(msg.ID, "msg_") || msg.Role != "assistant" || msg.Status != "completed" {
		t.Errorf("output item = %+v", msg)
	}
	if part.Type != "output_text" || part.Annotations == nil || len(strings.Fields(part.Text)) != n {
		t.Errorf("content part = %+v, want output_text of %d words and empty annotations", part, n)
	}
	p := len(Tokenize(prompt))
	want := responseUsage{InputTokens: p, OutputTokens: n, TotalTokens: p + n}
	if a.Usage == nil || *a.Usage != want {
		t.Errorf("usage = %+v, want %+v", a.Usage, want)
	}
}

func TestResponses(t *testing.T) {
	_, ts := newTestServer(t)
	tests := []struct {
		name, body string
		prompt     string // the rendered prompt whose tokens are the input tokens
		n          int
	}{
		{"string input", `{"model":"m","input":"hi there","max_output_tokens":3}`, "<|user|>\nhi there\n<|assistant|>\n", 3},
		{"default output length", `{"input":"hi"}`, "<|user|>\nhi\n<|assistant|>\n", defaultMaxTokens},
		{"instructions and message items",
			`{"instructions":"be brief","max_output_tokens":2,"input":[{"role":"user","content":"hi"},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]},` +
				`{"role":"user","content":[{"type":"input_text","text":"more "},{"type":"input_text","text":"please"}]}]}`,
			"<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\nhello\n<|user|>\nmore please\n<|assistant|>\n", 2},
		// Items other than messages, and parts other than text, count as their compact JSON.
		{"other items as JSON", `{"max_output_tokens":1,"input":[{"type": "function_call_output", "call_id":"c1","output":"42"}]}`,
			"<|function_call_output|>\n" + `{"type":"function_call_output","call_id":"c1","output":"42"}` + "\n<|assistant|>\n", 1},
		{"other parts as JSON", `{"max_output_tokens":1,"input":[{"role":"user","content":[{"type":"input_image","image_url":"http://h/i.png"}]}]}`,
			"<|user|>\n" + `{"type":"input_image","image_url":"http://h/i.png"}` + "\n<|assistant|>\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, ts.URL+"/v1/responses", tt.body)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var a responseAnswer
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				t.Fatal(err)
			}
			a.check(t, tt.prompt, tt.n)
		})
	}
}

// sseEvent is one named Server-Sent Event and when the client read it.
type sseEvent struct {
	name string
	data map[string]json.RawMessage
	at   time.Time
}

// readEvents returns the events of a named-event SSE stream, in order; every event must have
// an event line and a data line.
func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur *sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur == nil || cur.data == nil {
				t.Fatalf("event without a data line after %d events", len(evs))
			}
			evs, cur = append(evs, *cur), nil
		case strings.HasPrefix(line, "event: ") && cur == nil:
			cur = &sseEvent{name: strings.TrimPrefix(line, "event: "), at: time.Now()}
		case strings.HasPrefix(line, "data: ") && cur != nil && cur.data == nil:
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("event %q: data %q: %v", cur.name, line, err)
			}
		default:
			t.Fatalf("unexpected SSE line %q after %d events", line, len(evs))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("stream ends inside event %q", cur.name)
	}
	return evs
}

// field decodes an event's member into v.
func (e sseEvent) field(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(e.data[name], v); err != nil {
		t.Fatalf("event %q: member %q = %s: %v", e.name, name, e.data[name], err)
	}
}

func TestStreamingResponse(t *testing.T) {
	s, ts := newTestServer(t)
	tests := []struct {
		name, body, prompt string
		n                  int
		long               bool // the request runs long enough to be unfinished when response.created is read
	}{
		{"one token", `{"input":"hi","max_output_tokens":1,"stream":true}`, "<|user|>\nhi\n<|assistant|>\n", 1, false},
		{"many tokens", `{"instructions":"be brief","input":[{"role":"user","content":"hi"}],"max_output_tokens":64,"stream":true}`,
			"<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\n", 64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			finished := finishedOf(s)
			resp := post(t, ts.URL+"/v1/responses", tt.body)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			br := bufio.NewReader(resp.Body)
			// response.created is written when the engine accepts the request, not after its
			// tokens: a request of 64 tokens has not finished when the client reads it.
			if line, err := br.ReadString('\n'); err != nil || line != "event: response.created\n" {
				t.Fatalf("first line %q, err %v", line, err)
			}
			if got := finishedOf(s); tt.long && got != finished {
				t.Errorf("%d requests finished before response.created was read, want none", got-finished)
			}
			evs := readEvents(t, io.MultiReader(strings.NewReader("event: response.created\n"), br))

			want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
			for range tt.n {
				want = append(want, "response.output_text.delta")
			}
			want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed")
			if len(evs) != len(want) {
				t.Fatalf("got %d events, want %d: %v", len(evs), len(want), evs)
			}
			var created, completed responseAnswer
			evs[0].field(t, "response", &created)
			evs[len(evs)-1].field(t, "response", &completed)
			completed.check(t, tt.prompt, tt.n)
			if created.ID != completed.ID || created.Status != "in_progress" || len(created.Output) != 0 || created.Usage != nil {
				t.Errorf("created response = %+v, want the in-progress %s without output or usage", created, completed.ID)
			}
			msgID := completed.Output[0].ID
			var deltas strings.Builder
			for i, e := range evs {
				var typ, itemID string
				var seq int
				e.field(t, "type", &typ)
				e.field(t, "sequence_number", &seq)
				if e.name != want[i] || typ != want[i] || seq != i {
					t.Errorf("event %d is %q with type %q and sequence_number %d, want %q and %d", i, e.name, typ, seq, want[i], i)
				}
				if i > 0 && e.at.Before(evs[i-1].at) {
					t.Errorf("event %d read before event %d", i, i-1)
				}
				if _, ok := e.data["item_id"]; ok {
					e.field(t, "item_id", &itemID)
					if itemID != msgID {
						t.Errorf("event %d is about item %q, want %q", i, itemID, msgID)
					}
				}
				if e.name == "response.output_text.delta" {
					var d string
					e.field(t, "delta", &d)
					deltas.WriteString(d)
				}
			}
			var done string
			evs[len(evs)-4].field(t, "text", &done)
			if text := completed.Output[0].Content[0].Text; deltas.String() != text || done != text {
				t.Errorf("deltas %q and done text %q, want the completed text %q", deltas.String(), done, text)
			}
		})
	}
}

func TestResponsesBadRequests(t *testing.T) {
	_, ts := newTestServer(t)
	tests := []struct {
		name, body, want string
	}{
		{"bad JSON", `{"input":`, "invalid JSON"},
		{"missing input", `{"model":"m"}`, "input is required"},
		{"input a number", `{"input":42}`, "input must be a string or an array of input items"},
		{"empty array", `{"input":[]}`, "input must not be an empty array"},
		{"item not an object", `{"input":["hi"]}`, "input[0] must be an object"},
		{"message without role", `{"input":[{"role":"user","content":"a"},{"content":"hi"}]}`, "input[1] is a message without a role"},
		{"message without content", `{"input":[{"type":"message","role":"user"}]}`, "input[0].content is required"},
		{"content a number", `{"input":[{"role":"user","content":5}]}`, "input[0].content must be a string or an array of content parts"},
		{"part not an object", `{"input":[{"role":"user","content":["hi"]}]}`, "input[0].content[0] must be an object"},
		{"zero max_output_tokens", `{"input":"hi","max_output_tokens":0}`, "max_output_tokens must be at least 1, got 0"},
		// The engine refuses before the stream opens: a 400, not an event stream.
		{"streamed, too long for the model", `{"input":"hi","max_output_tokens":200000,"stream":true}`, "max_model_len"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBadRequest(t, post(t, ts.URL+"/v1/responses", tt.body), tt.want)
		})
	}
}

// finishedOf is how many requests s's engine has finished.
func finishedOf(s *Server) int64 {
	stop, length := s.finishedByReason()
	return stop + length
}
