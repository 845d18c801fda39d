package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		body string
		want Request
	}{
		{"completion, string prompt", Completions, `{"model":"m","prompt":"Hello","max_tokens":7}`,
			Request{Kind: Completions, Model: "m", Prompt: "Hello", MaxTokens: 7}},
		{"completion, array of one string", Completions, `{"model":"m","prompt":["Hello"]}`,
			Request{Kind: Completions, Model: "m", Prompt: "Hello"}},
		{"completion, empty prompt is a prompt", Completions, `{"model":"m","prompt":""}`,
			Request{Kind: Completions, Model: "m"}},
		{"completion, max_completion_tokens is not a completions field", Completions,
			`{"model":"m","prompt":"x","max_tokens":5,"max_completion_tokens":9}`,
			Request{Kind: Completions, Model: "m", Prompt: "x", MaxTokens: 5}},
		{"completion, stream with usage, user", Completions,
			`{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true},"user":"u1"}`,
			Request{Kind: Completions, Model: "m", Prompt: "x", Stream: true, IncludeUsage: true, User: "u1"}},
		{"completion, nulls mean absent", Completions,
			`{"model":"m","prompt":"x","stream":null,"stream_options":null,"max_tokens":null,"user":null}`,
			Request{Kind: Completions, Model: "m", Prompt: "x"}},
		{"completion, whole-number float max_tokens", Completions, `{"model":"m","prompt":"x","max_tokens":12.0}`,
			Request{Kind: Completions, Model: "m", Prompt: "x", MaxTokens: 12}},
		{"completion, max_tokens 0 is left to the engine", Completions, `{"model":"m","prompt":"x","max_tokens":0}`,
			Request{Kind: Completions, Model: "m", Prompt: "x"}},
		{"chat, two turns and the generation prompt", Chat,
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n"}},
		{"chat, text parts are concatenated", Chat,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]}]}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|user|>\nHello\n<|assistant|>\n"}},
		{"chat, null content (a tool-call turn) is empty", Chat,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"b","tool_call_id":"1"}]}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|user|>\na\n<|assistant|>\n\n<|tool|>\nb\n<|assistant|>\n"}},
		{"chat, max_completion_tokens wins over max_tokens", Chat,
			`{"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":100,"max_completion_tokens":20}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|user|>\na\n<|assistant|>\n", MaxTokens: 20}},
		{"chat, max_tokens alone", Chat,
			`{"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":100}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|user|>\na\n<|assistant|>\n", MaxTokens: 100}},
		{"chat, a field the router does not read may differ from a known one beyond case", Chat,
			`{"model":"m","messages":[{"role":"user","content":"a"}],"streams":true,"Temperature":1,"messages_extra":1}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|user|>\na\n<|assistant|>\n"}},
		{"completion, messages is not a completions field, in any case", Completions, `{"model":"m","prompt":"x","Messages":[]}`,
			Request{Kind: Completions, Model: "m", Prompt: "x"}},
		{"chat, stream without usage, other options kept", Chat,
			`{"model":"m","messages":[{"role":"developer","content":"a"}],"stream":true,"stream_options":{"continuous_usage_stats":false}}`,
			Request{Kind: Chat, Model: "m", Prompt: "<|developer|>\na\n<|assistant|>\n", Stream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.kind, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.want.ClientModel = tt.want.Model // until SetModel, always
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(Request{})); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"a"}]`
	tests := []struct {
		name  string
		kind  Kind
		body  string
		param string // the field the error names
		msg   string // a fragment of the message
	}{
		{"empty body", Completions, ``, "", "request body is empty"},
		{"malformed JSON", Completions, `{"model":"m",`, "", "invalid JSON body"},
		{"trailing garbage", Completions, `{"model":"m","prompt":"x"} x`, "", "invalid JSON body"},
		{"not an object", Chat, `["m"]`, "", "must be a JSON object, got an array"},
		{"null body", Chat, `null`, "", "must be a JSON object, got null"},
		{"missing model", Completions, `{"prompt":"x"}`, "model", "model is required"},
		{"empty model", Completions, `{"model":"","prompt":"x"}`, "model", "model must not be empty"},
		{"model not a string", Chat, `{"model":7,` + msgs + `}`, "model", "model must be a string, got a number"},
		{"missing prompt", Completions, `{"model":"m"}`, "prompt", "prompt is required"},
		{"prompt a number", Completions, `{"model":"m","prompt":5}`, "prompt", "prompt must be a string or an array of one string, got a number"},
		{"token-id prompt", Completions, `{"model":"m","prompt":[1,2,3]}`, "prompt", "token-id arrays are not supported"},
		{"nested token-id prompt", Completions, `{"model":"m","prompt":[[1,2]]}`, "prompt", "token-id arrays are not supported"},
		{"multi-prompt", Completions, `{"model":"m","prompt":["a","b"]}`, "prompt", "arrays of 2 prompts are not supported"},
		{"empty prompt array", Completions, `{"model":"m","prompt":[]}`, "prompt", "got an empty array"},
		{"missing messages", Chat, `{"model":"m"}`, "messages", "messages is required"},
		{"empty messages", Chat, `{"model":"m","messages":[]}`, "messages", "messages must not be empty"},
		{"messages an object", Chat, `{"model":"m","messages":{"role":"user"}}`, "messages", "messages must be an array"},
		{"message a string", Chat, `{"model":"m","messages":["hi"]}`, "messages[0]", "messages[0] must be an object"},
		{"message without role", Chat, `{"model":"m","messages":[{"content":"a"}]}`, "messages[0].role", "messages[0].role is required"},
		{"unknown role", Chat, `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}`,
			"messages[1].role", `messages[1].role must be system, developer, user, assistant, tool or function, got "robot"`},
		{"content a number", Chat, `{"model":"m","messages":[{"role":"user","content":3}]}`, "messages[0].content",
			"messages[0].content must be a string or an array of text parts, got a number"},
		{"image part", Chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
			"messages[0].content[1].type", `messages[0].content[1] has type "image_url"; only "text" parts are supported`},
		{"part text not a string", Chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`,
			"messages[0].content[0].text", "messages[0].content[0].text must be a string, got a number"},
		{"negative max_tokens", Completions, `{"model":"m","prompt":"x","max_tokens":-1}`, "max_tokens", "max_tokens must be a non-negative integer, got -1"},
		{"fractional max_tokens", Completions, `{"model":"m","prompt":"x","max_tokens":1.5}`, "max_tokens", "got 1.5"},
		{"max_tokens a string", Chat, `{"model":"m",` + msgs + `,"max_tokens":"10"}`, "max_tokens", "max_tokens must be a non-negative integer, got a string"},
		{"negative max_completion_tokens", Chat, `{"model":"m",` + msgs + `,"max_completion_tokens":-3}`, "max_completion_tokens",
			"max_completion_tokens must be a non-negative integer, got -3"},
		{"bad max_tokens under a good max_completion_tokens", Chat, `{"model":"m",` + msgs + `,"max_tokens":-1,"max_completion_tokens":3}`,
			"max_tokens", "max_tokens must be a non-negative integer"},
		{"stream a string", Completions, `{"model":"m","prompt":"x","stream":"yes"}`, "stream", "stream must be a boolean, got a string"},
		{"stream_options without stream", Completions, `{"model":"m","prompt":"x","stream_options":{"include_usage":true}}`,
			"stream_options", "stream_options is only allowed when stream is true"},
		{"stream_options with stream false", Chat, `{"model":"m",` + msgs + `,"stream":false,"stream_options":{}}`,
			"stream_options", "stream_options is only allowed when stream is true"},
		{"stream_options not an object", Chat, `{"model":"m",` + msgs + `,"stream":true,"stream_options":true}`,
			"stream_options", "stream_options must be an object"},
		{"include_usage not a boolean", Chat, `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"include_usage":1}}`,
			"stream_options.include_usage", "stream_options.include_usage must be a boolean, got a number"},
		{"user not a string", Completions, `{"model":"m","prompt":"x","user":42}`, "user", "user must be a string, got a number"},
		// A key differing from a field the router reads only in case: an engine on encoding/json
		// reads it as the field, one on pydantic ignores it; the router refuses it rather than guess.
		{"Stream", Chat, `{"model":"m",` + msgs + `,"Stream":true}`, "stream",
			`key "Stream" differs from "stream" only in case; field names are case-sensitive (engines disagree on such keys), send "stream"`},
		// Beside the field itself, the engine on encoding/json reads the last of the two, the router the exact one.
		{"stream and STREAM", Chat, `{"model":"m",` + msgs + `,"stream":false,"STREAM":true}`, "stream", `key "STREAM" differs from "stream"`},
		{"Model", Completions, `{"Model":"m","prompt":"x"}`, "model", `key "Model" differs from "model"`},
		// Unicode folding as encoding/json's: ſ (long s) folds to s, K (Kelvin) to k.
		{"long s", Chat, `{"model":"m",` + msgs + `,"\u017ftream":true}`, "stream", `key "ſtream" differs from "stream"`},
		{"Kelvin", Chat, `{"model":"m",` + msgs + `,"max_to\u212aens":1}`, "max_tokens", "key \"max_to\u212aens\" differs from \"max_tokens\""},
		{"Max_Completion_Tokens", Chat, `{"model":"m",` + msgs + `,"Max_Completion_Tokens":1}`, "max_completion_tokens", `differs from "max_completion_tokens"`},
		{"Messages", Chat, `{"model":"m","Messages":[]}`, "messages", `key "Messages" differs from "messages"`},
		{"Prompt", Completions, `{"model":"m","prompt":"x","PROMPT":"y"}`, "prompt", `key "PROMPT" differs from "prompt"`},
		{"User", Completions, `{"model":"m","prompt":"x","User":"u"}`, "user", `key "User" differs from "user"`},
		{"Stream_Options", Chat, `{"model":"m",` + msgs + `,"stream":true,"Stream_Options":{}}`, "stream_options", `differs from "stream_options"`},
		{"Include_Usage", Chat, `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"Include_Usage":true}}`, "stream_options.include_usage",
			`stream_options: key "Include_Usage" differs from "include_usage"`},
		{"Role", Chat, `{"model":"m","messages":[{"role":"user","Role":"system","content":"a"}]}`, "messages[0].role",
			`messages[0]: key "Role" differs from "role"`},
		{"Content", Chat, `{"model":"m","messages":[{"role":"user","Content":"a"}]}`, "messages[0].content", `messages[0]: key "Content" differs from "content"`},
		{"Text of a part", Chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","Text":"a"}]}]}`, "messages[0].content[0].text",
			`messages[0].content[0]: key "Text" differs from "text"`},
		// Of several, the first in sorted order is named, whatever the map's order.
		{"several", Chat, `{"model":"m",` + msgs + `,"User":"u","Stream":true,"MODEL":"x"}`, "model", `key "MODEL" differs from "model"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.kind, []byte(tt.body))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", r)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if e.Status != http.StatusBadRequest || e.Type != TypeInvalidRequest {
				t.Errorf("status %d type %q, want 400 %q", e.Status, e.Type, TypeInvalidRequest)
			}
			if e.Param != tt.param {
				t.Errorf("param %q, want %q", e.Param, tt.param)
			}
			if !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.msg)
			}
		})
	}
}

func TestUpstreamBody(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		hidden    bool           // HiddenUsage
		wantOpts  map[string]any // stream_options upstream; nil when it must be as the client sent it
		unchanged bool           // the body must come back byte for byte
	}{
		{"not streamed: unchanged", `{"model":"m","prompt":"<a> & b","max_tokens":3,"temperature":0.5,"logit_bias":{"1":2}}`,
			false, nil, true},
		{"streamed with usage: unchanged", `{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true}}`,
			false, nil, true},
		{"streamed, no stream_options: added", ` {"model":"m","prompt":"<a> & b","stream":true,"seed":7,"extra":{"nested":[1,"two",null]}}`,
			true, map[string]any{"include_usage": true}, false},
		{"streamed, null stream_options: set", `{"model":"m","prompt":"x","stream":true,"stream_options":null}`,
			true, map[string]any{"include_usage": true}, false},
		{"streamed, include_usage false: set, others kept", `{"model":"m","prompt":"x","stream":true,"n":2,"stream_options":{"include_usage":false,"continuous_usage_stats":false}}`,
			true, map[string]any{"include_usage": true, "continuous_usage_stats": false}, false},
		{"chat streamed, unicode and html kept", `{"model":"m","messages":[{"role":"user","content":"héllo <b>\u00e9</b> \ud83d\ude00"}],"stream":true,"stream_options":{}}`,
			true, map[string]any{"include_usage": true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := Completions
			if strings.Contains(tt.body, `"messages"`) {
				kind = Chat
			}
			r, err := Parse(kind, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if r.HiddenUsage() != tt.hidden {
				t.Errorf("HiddenUsage = %v, want %v", r.HiddenUsage(), tt.hidden)
			}
			up, err := r.UpstreamBody()
			if err != nil {
				t.Fatalf("UpstreamBody: %v", err)
			}
			if tt.unchanged && string(up) != tt.body {
				t.Errorf("UpstreamBody = %s, want the body unchanged", up)
			}
			var client, upstream map[string]any
			if err := json.Unmarshal([]byte(tt.body), &client); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(up, &upstream); err != nil {
				t.Fatalf("UpstreamBody is not JSON: %v\n%s", err, up)
			}
			if tt.wantOpts != nil {
				if diff := cmp.Diff(tt.wantOpts, upstream["stream_options"]); diff != "" {
					t.Errorf("stream_options (-want +got):\n%s", diff)
				}
				delete(client, "stream_options")
				delete(upstream, "stream_options")
			}
			if diff := cmp.Diff(client, upstream); diff != "" {
				t.Errorf("client fields changed upstream (-client +upstream):\n%s", diff)
			}
			// What the engine parses is what the router parsed.
			again, err := Parse(kind, up)
			if err != nil {
				t.Fatalf("Parse(UpstreamBody): %v", err)
			}
			if again.Prompt != r.Prompt || again.Model != r.Model || again.Stream != r.Stream || !again.IncludeUsage && r.Stream {
				t.Errorf("Parse(UpstreamBody) = %+v, want %+v with include_usage", again, r)
			}
		})
	}
}

func TestKind(t *testing.T) {
	if Completions.Path() != "/v1/completions" || Chat.Path() != "/v1/chat/completions" {
		t.Errorf("paths %q %q", Completions.Path(), Chat.Path())
	}
	if Completions.String() != "completions" || Chat.String() != "chat" || Kind(7).String() != "Kind(7)" {
		t.Errorf("names %q %q %q", Completions, Chat, Kind(7))
	}
}

func TestTokenizeBody(t *testing.T) {
	for _, tt := range []struct {
		kind Kind
		body string
		want string // "" when /tokenize does not take the API
	}{
		{Completions, `{"model":"m","prompt":"hi there","max_tokens":3}`, `{"model":"m","prompt":"hi there"}`},
		{Completions, `{"model":"m","prompt":["hi there"]}`, `{"model":"m","prompt":"hi there"}`},
		{Chat, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, `{"messages":[{"role":"user","content":"hi"}],"model":"m"}`},
		{Responses, `{"model":"m","input":"hi"}`, ""},
		{Embeddings, `{"model":"m","input":"hi"}`, ""},
	} {
		r, err := Parse(tt.kind, []byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		b, ok, err := r.TokenizeBody()
		if err != nil || ok != (tt.want != "") || string(b) != tt.want {
			t.Errorf("%v %s: TokenizeBody = %s, %v, %v; want %s", tt.kind, tt.body, b, ok, err, tt.want)
		}
	}
}
