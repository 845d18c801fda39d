package openai

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseEmbeddings(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   Request
		tokens int64 // InputTokens
	}{
		// "Hello world" is 11 runes: ⌈11/4⌉ = 3 tokens.
		{"a string", `{"model":"e","input":"Hello world"}`,
			Request{Kind: Embeddings, Model: "e", Prompt: "Hello world"}, 3},
		// "a\nbb\nccc" is 8 runes: 2 tokens.
		{"strings joined by a newline", `{"model":"e","input":["a","bb","ccc"]}`,
			Request{Kind: Embeddings, Model: "e", Prompt: "a\nbb\nccc"}, 2},
		{"token ids: one token each", `{"model":"e","input":[101, 2023, 0, 102]}`,
			Request{Kind: Embeddings, Model: "e"}, 4},
		// 3 + 2 ids; a whole number written 7.0 is an id, as pydantic reads it.
		{"arrays of token ids: all of them", `{"model":"e","input":[[1,2,3],[4,7.0]]}`,
			Request{Kind: Embeddings, Model: "e"}, 5},
		{"other fields pass through, user is read, stream is not an embeddings field", `{"model":"e","input":"x","encoding_format":"base64","dimensions":256,"user":"u","stream":true,"max_tokens":9}`,
			Request{Kind: Embeddings, Model: "e", Prompt: "x", User: "u"}, 1},
		{"a key in another case that embeddings do not read", `{"model":"e","input":"x","Stream":true,"Messages":1}`,
			Request{Kind: Embeddings, Model: "e", Prompt: "x"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(Embeddings, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tt.want.ClientModel = tt.want.Model
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreUnexported(Request{})); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if n := got.InputTokens(); n != tt.tokens {
				t.Errorf("InputTokens = %d, want %d", n, tt.tokens)
			}
			if got.HiddenUsage() || got.AnswerText("") != "" {
				t.Errorf("HiddenUsage %v, AnswerText %q: embeddings have neither", got.HiddenUsage(), got.AnswerText(""))
			}
			up, err := got.UpstreamBody()
			if err != nil || string(up) != tt.body {
				t.Errorf("UpstreamBody = %s, %v; want the body unchanged", up, err)
			}
		})
	}
}

func TestParseEmbeddingsBad(t *testing.T) {
	const accepted = "input must be a non-empty string, an array of non-empty strings, an array of token ids (integers) or an array of non-empty arrays of token ids"
	tests := []struct {
		name  string
		body  string
		param string
		msg   string // the message, in full
	}{
		{"no input", `{"model":"e"}`, "input",
			"input is required (a non-empty string, an array of non-empty strings, an array of token ids (integers) or an array of non-empty arrays of token ids)"},
		{"null input", `{"model":"e","input":null}`, "input", "input is required (a non-empty string, an array of non-empty strings, an array of token ids (integers) or an array of non-empty arrays of token ids)"},
		{"empty string", `{"model":"e","input":""}`, "input", accepted + ", got an empty string"},
		{"empty array", `{"model":"e","input":[]}`, "input", accepted + ", got an empty array"},
		{"a number", `{"model":"e","input":5}`, "input", accepted + ", got a number"},
		{"an object", `{"model":"e","input":{"text":"x"}}`, "input", accepted + ", got an object"},
		{"an array of objects", `{"model":"e","input":[{"text":"x"}]}`, "input[0]", accepted + ", got an array holding an object"},
		{"an empty string in the array", `{"model":"e","input":["a",""]}`, "input[1]", "input[1] must not be an empty string"},
		{"strings then an id", `{"model":"e","input":["a",1]}`, "input[1]", "input[1] must be a string like input[0], got a number"},
		{"ids then a string", `{"model":"e","input":[1,"a"]}`, "input[1]", "input[1] must be a token id (a non-negative integer), got a string"},
		{"a negative id", `{"model":"e","input":[1,-2]}`, "input[1]", "input[1] must be a token id (a non-negative integer), got -2"},
		{"a fractional id", `{"model":"e","input":[[1],[2.5]]}`, "input[1][0]", "input[1][0] must be a token id (a non-negative integer), got 2.5"},
		{"an empty array of ids", `{"model":"e","input":[[1],[]]}`, "input[1]", "input[1] must not be an empty array of token ids"},
		{"arrays then a number", `{"model":"e","input":[[1],2]}`, "input[1]", "input[1] must be an array of token ids like input[0], got a number"},
		{"no model", `{"input":"x"}`, "model", "model is required"},
		{"user not a string", `{"model":"e","input":"x","user":1}`, "user", "user must be a string, got a number"},
		{"Input", `{"model":"e","input":"x","Input":"y"}`, "input",
			`key "Input" differs from "input" only in case; field names are case-sensitive (engines disagree on such keys), send "input"`},
		{"empty body", ``, "", "request body is empty; send a JSON object with model and input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkBadRequest(t, Embeddings, tt.body, tt.param, tt.msg)
		})
	}
}

// checkBadRequest checks that Parse(kind, body) is a 400 invalid_request_error about param whose
// message is msg.
func checkBadRequest(t *testing.T, kind Kind, body, param, msg string) {
	t.Helper()
	r, err := Parse(kind, []byte(body))
	if err == nil {
		t.Fatalf("Parse succeeded: %+v", r)
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v is a %T, want *Error", err, err)
	}
	if e.Status != 400 || e.Type != TypeInvalidRequest || e.Param != param || e.Message != msg {
		t.Errorf("error %d %q param %q\n%q\nwant 400 %q param %q\n%q", e.Status, e.Type, e.Param, e.Message, TypeInvalidRequest, param, msg)
	}
}
