package openai

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseResponses(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Request
	}{
		{"a string is one user turn", `{"model":"r","input":"Hi"}`,
			Request{Kind: Responses, Model: "r", Prompt: "<|user|>\nHi\n<|assistant|>\n"}},
		{"instructions come first, as a system turn", `{"model":"r","instructions":"Be brief.","input":"Hi","stream":true,"max_output_tokens":64,"user":"u"}`,
			Request{Kind: Responses, Model: "r", Prompt: "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n", Stream: true, MaxTokens: 64, User: "u"}},
		{"message items, with and without type, string and part contents",
			`{"model":"r","input":[{"role":"developer","content":"d"},{"type":"message","role":"user","content":[{"type":"input_text","text":"Hel"},{"type":"text","text":"lo"}]},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hey","annotations":[]}]},{"role":"user","content":"More"}]}`,
			Request{Kind: Responses, Model: "r", Prompt: "<|developer|>\nd\n<|user|>\nHello\n<|assistant|>\nHey\n<|user|>\nMore\n<|assistant|>\n"}},
		// Other items render as their compacted JSON under their type, so the same items always
		// hash the same whatever the client's spacing.
		{"other items as their JSON",
			`{"model":"r","input":[{"role":"user","content":"weather?"},{"type":"function_call", "call_id":"c1","name":"w","arguments":"{\"city\": \"Oslo\"}"},` +
				`{"type":"function_call_output","call_id":"c1","output":"rain"}]}`,
			Request{Kind: Responses, Model: "r", Prompt: "<|user|>\nweather?\n" +
				`<|function_call|>` + "\n" + `{"type":"function_call","call_id":"c1","name":"w","arguments":"{\"city\": \"Oslo\"}"}` + "\n" +
				`<|function_call_output|>` + "\n" + `{"type":"function_call_output","call_id":"c1","output":"rain"}` + "\n<|assistant|>\n"}},
		{"max_tokens and stream_options are not responses fields: they pass through",
			`{"model":"r","input":"x","max_tokens":5,"stream_options":{"include_obfuscation":false},"Max_Tokens":1}`,
			Request{Kind: Responses, Model: "r", Prompt: "<|user|>\nx\n<|assistant|>\n"}},
		{"null content and empty instructions add nothing", `{"model":"r","instructions":"","input":[{"role":"assistant","content":null}]}`,
			Request{Kind: Responses, Model: "r", Prompt: "<|assistant|>\n\n<|assistant|>\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(Responses, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.want.ClientModel = tt.want.Model
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(Request{})); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if got.InputTokens() != EstimateTokens(got.Prompt) {
				t.Errorf("InputTokens %d, want EstimateTokens(Prompt) %d", got.InputTokens(), EstimateTokens(got.Prompt))
			}
			// A responses stream always carries its usage: nothing is hidden, nothing added.
			up, err := got.UpstreamBody()
			if got.HiddenUsage() || err != nil || string(up) != tt.body {
				t.Errorf("HiddenUsage %v, UpstreamBody %s, %v; want false and the body unchanged", got.HiddenUsage(), up, err)
			}
		})
	}
}

// A follow-up's prompt extends the first request's prompt and its answer, as for chat: what the
// prefix index relies on.
func TestResponsesFollowUp(t *testing.T) {
	first, err := Parse(Responses, []byte(`{"model":"r","instructions":"Be brief.","input":"Hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse(Responses, []byte(`{"model":"r","instructions":"Be brief.","input":[{"role":"user","content":"Hi"},`+
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello!"}]},{"role":"user","content":"Bye"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if seen := first.Prompt + first.AnswerText("Hello!"); !strings.HasPrefix(next.Prompt, seen) {
		t.Errorf("follow-up prompt\n%q\ndoes not start with the first prompt and its answer\n%q", next.Prompt, seen)
	}
}

func TestParseResponsesBad(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		param string
		msg   string // the message, in full
	}{
		{"no input", `{"model":"r"}`, "input", "input is required (a string or a non-empty array of input items)"},
		{"empty input array", `{"model":"r","input":[]}`, "input", "input must not be empty; send a string or an array of input items"},
		{"input a number", `{"model":"r","input":1}`, "input", "input must be a string or an array of input items, got a number"},
		{"an item that is a string", `{"model":"r","input":["hi"]}`, "input[0]",
			`input[0] must be an input item (an object such as {"role": "user", "content": "…"}), got a string`},
		{"a message without role", `{"model":"r","input":[{"type":"message","content":"a"}]}`, "input[0].role", "input[0].role is required"},
		{"an item without type or role", `{"model":"r","input":[{"content":"a"}]}`, "input[0].role", "input[0].role is required"},
		{"a tool role", `{"model":"r","input":[{"role":"tool","content":"a"}]}`, "input[0].role",
			`input[0].role must be system, developer, user or assistant, got "tool"`},
		{"type not a string", `{"model":"r","input":[{"type":1,"role":"user","content":"a"}]}`, "input[0].type", "input[0].type must be a string, got a number"},
		{"an image part", `{"model":"r","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"}]}]}`,
			"input[0].content[1].type", `input[0].content[1] has type "input_image"; only "input_text", "output_text" or "text" parts are supported`},
		{"a file part", `{"model":"r","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`,
			"input[0].content[0].type", `input[0].content[0] has type "input_file"; only "input_text", "output_text" or "text" parts are supported`},
		{"a part that is a string", `{"model":"r","input":[{"role":"user","content":["a"]}]}`,
			"input[0].content[0]", `input[0].content[0] must be a {"type": "input_text", "text": …} object, got a string`},
		{"part type not a string", `{"model":"r","input":[{"role":"user","content":[{"type":1,"text":"a"}]}]}`,
			"input[0].content[0].type", `input[0].content[0].type must be the string "input_text", "output_text" or "text", got a number`},
		{"content a number", `{"model":"r","input":[{"role":"user","content":2}]}`, "input[0].content",
			"input[0].content must be a string or an array of text parts, got a number"},
		{"instructions not a string", `{"model":"r","input":"x","instructions":["a"]}`, "instructions", "instructions must be a string, got an array"},
		{"max_output_tokens negative", `{"model":"r","input":"x","max_output_tokens":-1}`, "max_output_tokens",
			"max_output_tokens must be a non-negative integer, got -1"},
		{"stream a string", `{"model":"r","input":"x","stream":"yes"}`, "stream", "stream must be a boolean, got a string"},
		{"Type of an item", `{"model":"r","input":[{"Type":"function_call","role":"user","content":"a"}]}`, "input[0].type",
			`input[0]: key "Type" differs from "type" only in case; field names are case-sensitive (engines disagree on such keys), send "type"`},
		{"Instructions", `{"model":"r","input":"x","Instructions":"y"}`, "instructions",
			`key "Instructions" differs from "instructions" only in case; field names are case-sensitive (engines disagree on such keys), send "instructions"`},
		{"empty body", ` `, "", "request body is empty; send a JSON object with model and input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkBadRequest(t, Responses, tt.body, tt.param, tt.msg)
		})
	}
}
