package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A responses stream in vLLM's shape: an "event:" line naming the type, then the data.
func respEvent(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

var (
	respCreated = respEvent("response.created",
		`{"response":{"id":"resp_1","created_at":1,"model":"m","object":"response","output":[],"status":"in_progress","usage":null},"sequence_number":0,"type":"response.created"}`)
	respItemAdded = respEvent("response.output_item.added",
		`{"item":{"id":"msg_1","content":[],"role":"assistant","status":"in_progress","type":"message"},"output_index":0,"sequence_number":1,"type":"response.output_item.added"}`)
	respHel = respEvent(outputTextDelta,
		`{"content_index":0,"delta":"Hel","item_id":"msg_1","logprobs":[],"output_index":0,"sequence_number":2,"type":"response.output_text.delta"}`)
	respLo = respEvent(outputTextDelta,
		`{"content_index":0,"delta":"lo","item_id":"msg_1","logprobs":[],"output_index":0,"sequence_number":3,"type":"response.output_text.delta"}`)
	respTextDone = respEvent("response.output_text.done",
		`{"content_index":0,"item_id":"msg_1","logprobs":[],"output_index":0,"sequence_number":4,"text":"Hello","type":"response.output_text.done"}`)
	respCompleted = respEvent("response.completed",
		`{"response":{"id":"resp_1","model":"m","object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"Hello"}]}],"status":"completed",`+
			`"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":8},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":14}},`+
			`"sequence_number":5,"type":"response.completed"}`)
)

func TestRelayResponses(t *testing.T) {
	type call struct {
		n  int64
		at time.Time
	}
	usage := &Usage{PromptTokens: 12, CompletionTokens: 2, CachedTokens: 8}
	tests := []struct {
		name   string
		events []string
		o      RelayOptions // Kind Responses is added
		want   []string     // what the client gets; nil: the events as they came
		res    StreamResult
		tokens []call
	}{
		{
			name:   "a whole stream passes through, event lines included",
			events: []string{respCreated, respItemAdded, respHel, respLo, respTextDone, respCompleted},
			// The clock ticks once per delta: 10, 20 ms. Usage from response.completed.
			res:    StreamResult{FirstContent: ms(10), Last: ms(20), Usage: usage, Answer: "Hello", Done: true, Chunks: 2},
			tokens: []call{{1, ms(10)}, {2, ms(20)}},
		},
		{
			name:   "cut before its terminal event: not done, no usage",
			events: []string{respCreated, respItemAdded, respHel, respLo},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10 * 2), Answer: "Hello", Chunks: 2},
			tokens: []call{{1, ms(10)}, {2, ms(20)}},
		},
		{
			name: "reasoning and tool-call argument deltas are content, not answer; an empty delta is neither",
			events: []string{
				respEvent("response.reasoning_text.delta", `{"delta":"think","item_id":"rs_1","output_index":0,"content_index":0,"sequence_number":1,"type":"response.reasoning_text.delta"}`),
				respEvent(outputTextDelta, `{"delta":"","item_id":"msg_1","output_index":1,"content_index":0,"sequence_number":2,"type":"response.output_text.delta"}`),
				respEvent("response.function_call_arguments.delta", `{"delta":"{\"city\"","item_id":"fc_1","output_index":2,"sequence_number":3,"type":"response.function_call_arguments.delta"}`),
				respEvent("response.incomplete", `{"response":{"status":"incomplete","usage":{"input_tokens":3,"output_tokens":4}},"sequence_number":4,"type":"response.incomplete"}`),
			},
			// response.incomplete is terminal too: cut by max_output_tokens, complete as a stream.
			res:    StreamResult{FirstContent: ms(10), Last: ms(20), Usage: &Usage{PromptTokens: 3, CompletionTokens: 4}, Done: true, Chunks: 2},
			tokens: []call{{1, ms(10)}, {2, ms(20)}},
		},
		{
			name: "the type from the event line when the data has none; response.failed ends it",
			events: []string{
				"event: response.output_text.delta\r\ndata: {\"delta\":\"x\"}\r\n\r\n",
				": keep-alive\n\n",
				"id: 9\nevent: response.failed\ndata: {\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\"},\"usage\":null}}\n\n",
			},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Answer: "x", Done: true, Chunks: 1},
			tokens: []call{{1, ms(10)}},
		},
		{
			name:   "[DONE] ends it too; an error event and other JSON pass through",
			events: []string{respHel, respEvent("error", `{"type":"error","code":"x","message":"boom","sequence_number":3}`), "data: [1]\n\n", done},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Answer: "Hel", Done: true, Chunks: 1},
			tokens: []call{{1, ms(10)}},
		},
		{
			name:   "HideUsage does not apply: the usage is the client's",
			events: []string{respHel, respCompleted},
			o:      RelayOptions{HideUsage: true},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Usage: usage, Answer: "Hel", Done: true, Chunks: 1},
			tokens: []call{{1, ms(10)}},
		},
		{
			name:   "Rename reaches the model nested in response, and nothing else",
			events: []string{respCreated, respHel, respCompleted},
			o:      RelayOptions{Rename: ModelRename{From: "m", To: "client"}},
			want: []string{strings.Replace(respCreated, `"model":"m"`, `"model":"client"`, 1), respHel,
				strings.Replace(respCompleted, `"model":"m"`, `"model":"client"`, 1)},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Usage: usage, Answer: "Hel", Done: true, Chunks: 1},
			tokens: []call{{1, ms(10)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst recorder
			var firsts []time.Time
			var tokens []call
			src := &pacedSource{t: t, pieces: slices.Clone(tt.events), dst: &dst}
			o := tt.o
			o.Kind, o.Flush, o.Now = Responses, dst.flush, clock()
			o.OnFirst = func(at time.Time) { firsts = append(firsts, at) }
			o.OnTokens = func(n int64, at time.Time) { tokens = append(tokens, call{n, at}) }
			res, err := Relay(&dst, src, o)
			if err != nil {
				t.Fatalf("Relay: %v", err)
			}
			want := tt.want
			if want == nil {
				want = tt.events
			}
			if got := dst.String(); got != strings.Join(want, "") {
				t.Errorf("client got\n%q\nwant\n%q", got, strings.Join(want, ""))
			}
			if diff := cmp.Diff(tt.res, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if len(firsts) != 1 || !firsts[0].Equal(tt.res.FirstContent) {
				t.Errorf("onFirst calls %v, want one at %v", firsts, tt.res.FirstContent)
			}
			if diff := cmp.Diff(tt.tokens, tokens, cmp.AllowUnexported(call{})); diff != "" {
				t.Errorf("onTokens calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A responses stream that is not one (data that is not JSON) fails as a chat stream does, the
// event at fault not written.
func TestRelayResponsesNotAStream(t *testing.T) {
	var dst strings.Builder
	res, err := Relay(&dst, strings.NewReader(respHel+"event: response.output_text.delta\ndata: oops\n\n"), RelayOptions{Kind: Responses})
	var se *SourceError
	if !errors.As(err, &se) || !errors.Is(err, ErrNotAStream) {
		t.Fatalf("error %v, want a SourceError wrapping ErrNotAStream", err)
	}
	if dst.String() != respHel || res.Done || res.Chunks != 1 {
		t.Errorf("client got %q, result %+v; want the first event only, not done", dst.String(), res)
	}
}

// responseEventCases are responses events of the usual shapes and shapes meant to trip the
// one-pass reader: each must read as encoding/json reads it.
var responseEventCases = []string{
	`{"content_index":0,"delta":"Hel","item_id":"msg_1","logprobs":[],"output_index":0,"sequence_number":2,"type":"response.output_text.delta"}`,
	`{"response":{"id":"r","usage":{"input_tokens":1,"output_tokens":2}},"sequence_number":5,"type":"response.completed"}`,
	`{"type":"response.reasoning.delta","delta":{"content":"We"}}`,
	` { "type" : "response.output_text.delta" , "delta" : "a\n\"b\" \u00e9" } `,
	`{"type":null,"delta":null,"response":null}`,
	`{}`,
	`null`,
	`{"Type":"response.completed"}`,
	`{"type":"a","type":"b"}`,
	`{"t\u0079pe":"response.completed"}`,
	`{"type":1}`,
	`{"type":"x"} trailing`,
	`[1]`,
	``,
}

func TestReadResponseEventAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range responseEventCases {
		checkResponseEvent(t, []byte(c))
	}
	for _, c := range responseEventCases[:2] {
		if _, ok := scanResponseEvent([]byte(c)); !ok {
			t.Errorf("scanResponseEvent gave up on a usual event: %s", c)
		}
	}
}

// FuzzReadResponseEvent looks for an event that scanResponseEvent reads differently from
// encoding/json.
func FuzzReadResponseEvent(f *testing.F) {
	for _, c := range responseEventCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkResponseEvent(t, data) })
}

func checkResponseEvent(t *testing.T, data []byte) {
	t.Helper()
	want, wantOK := decodeResponseEvent(data)
	got, gotOK := readResponseEvent(data)
	if gotOK != wantOK || got.typ != want.typ || string(got.delta) != string(want.delta) || string(got.response) != string(want.response) {
		t.Errorf("%q:\nreadResponseEvent %+v, %v\nencoding/json     %+v, %v", data, got, gotOK, want, wantOK)
	}
}

// FuzzRelayResponses relays arbitrary bytes as a responses stream, handed out in pieces whose
// sizes the fuzzer picks, and checks that when Relay returns nil the client got the stream byte
// for byte, flushed, and that Done, Chunks, Answer and Usage are what a reading of each event
// with encoding/json finds (the type from the data, else the event field; a terminal event or
// [DONE] ends it; a ".delta" event with output is a token).
func FuzzRelayResponses(f *testing.F) {
	seeds := []string{
		respCreated + respItemAdded + respHel + respLo + respTextDone + respCompleted,
		"event: response.output_text.delta\r\ndata: {\"delta\":\"x\"}\r\n\r\n: ping\n\nevent: response.failed\ndata: {\"response\":{\"usage\":{\"input_tokens\":1}}}",
		respHel + "data: [DONE]\n\n" + respLo,
		"data: {\"type\":\"response.reasoning_text.delta\",\"delta\":{}}\n\ndata: {\"type\":\"response.incomplete\",\"response\":null}\n\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), []byte{byte(i * 37), 5, 200})
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(stream) > maxEventBytes/4 {
			return
		}
		var dst relayDst
		src := &piecesReader{data: stream, cuts: cuts, dst: &dst}
		res, err := Relay(&dst, src, RelayOptions{Kind: Responses, Flush: dst.flush})
		if err != nil {
			return // what a failing stream leaves written is the relay tests' to check
		}
		if dst.unflushed != 0 || !bytes.Equal(dst.Bytes(), stream) {
			t.Fatalf("stream %q relayed as %q (%d writes unflushed)", stream, dst.Bytes(), dst.unflushed)
		}
		var want streamModel
		for _, ev := range splitEvents(stream) {
			if !ev.hasData {
				continue
			}
			if string(ev.data) == "[DONE]" {
				want.done = true
				continue
			}
			e, ok := decodeResponseEvent(ev.data)
			if !ok {
				continue
			}
			typ := e.typ
			for _, line := range ev.others { // without a type, the last event field's value
				if name, isEvent := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("event:")); isEvent && e.typ == "" {
					typ = string(bytes.TrimPrefix(name, []byte(" ")))
				}
			}
			var resp struct{ Usage json.RawMessage }
			switch {
			case terminalEvents[typ]:
				want.done = true
				if json.Unmarshal(e.response, &resp) == nil && decodeResponsesUsage(resp.Usage) != nil {
					want.usage = decodeResponsesUsage(resp.Usage)
				}
			case strings.HasSuffix(typ, ".delta") && present(e.delta) && string(e.delta) != `""`:
				want.chunks++
				if typ == outputTextDelta {
					var s string
					_ = json.Unmarshal(e.delta, &s)
					want.answer += s
				}
			}
		}
		if res.Done != want.done || res.Chunks != want.chunks || res.Answer != want.answer ||
			(res.Usage == nil) != (want.usage == nil) || res.Usage != nil && *res.Usage != *want.usage {
			t.Fatalf("stream %q: result %+v, want done %v, %d chunks, answer %q, usage %+v",
				stream, res, want.done, want.chunks, want.answer, want.usage)
		}
	})
}
