package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// inputSeeds are embeddings (responses false) and responses request bodies of every shape Parse
// meets, and bodies it must refuse.
var inputSeeds = []struct {
	responses bool
	body      string
}{
	{false, `{"model":"e","input":"Hello world"}`},
	{false, `{"model":"e","input":["a","bb"],"encoding_format":"float","dimensions":8,"user":"u"}`},
	{false, `{"model":"e","input":[101,2023,7.0]}`},
	{false, `{"model":"e","input":[[1,2],[3]]}`},
	{false, `{"model":"e","input":[[1],[]]}`},
	{false, `{"model":"e","input":["a",1]}`},
	{false, `{"model":"e","input":[-1]}`},
	{false, `{"model":"e","input":""}`},
	{false, `{"m\u006fdel":"e","input":"x","Stream":1}`},
	{true, `{"model":"r","input":"Hi","instructions":"Be brief.","stream":true,"max_output_tokens":16}`},
	{true, `{"model":"r","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]}]}`},
	{true, `{"model":"r","input":[{"type":"function_call","call_id":"c","arguments":"{\"a\": 1}"},{"type":"function_call_output", "output":"x"}]}`},
	{true, `{"model":"r","input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]}`},
	{true, `{"model":"r","input":[{"role":"tool","content":"x"}]}`},
	{true, `{"model":"r","input":[]}`},
	{true, `{"model":"r","input":[{"Type":"x"}]}`},
	{true, `{"model":"r","model":"s","input":"x","stream_options":{"include_usage":false}}`},
}

// FuzzParseInput checks Parse of embeddings and responses bodies against encoding/json's
// reading: an error is a 400 *Error; an accepted body has the model, user, stream and limit
// encoding/json reads, ClientModel == Model, an embeddings prompt of the input's strings joined
// by "\n" or as many input tokens as ids, a responses prompt ending with the generation prompt;
// nothing is hidden, UpstreamBody is the body itself, and SetModel keeps every other member
// (checkSetModel).
func FuzzParseInput(f *testing.F) {
	for _, s := range inputSeeds {
		f.Add(s.responses, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, responses bool, body []byte) {
		kind := Embeddings
		if responses {
			kind = Responses
		}
		r, err := Parse(kind, body)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Status != 400 || e.Type != TypeInvalidRequest || e.Message == "" || r != nil {
				t.Fatalf("Parse(%v, %q) = %v, %T %v; want nil and a 400 *Error", kind, body, r, err, err)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil || m == nil {
			t.Fatalf("Parse accepted %q, which encoding/json reads as %v, %v", body, m, err)
		}
		var model, user string
		var stream bool
		if json.Unmarshal(m["model"], &model) != nil || r.Model != model || r.ClientModel != model ||
			(!isNull(m["user"]) && (json.Unmarshal(m["user"], &user) != nil || r.User != user)) {
			t.Fatalf("Parse(%v, %q) = %+v: model or user differs from the body's", kind, body, *r)
		}
		if kind == Responses && !isNull(m["stream"]) && (json.Unmarshal(m["stream"], &stream) != nil || r.Stream != stream) {
			t.Fatalf("Parse(%v, %q): Stream %v", kind, body, r.Stream)
		}
		limit, ok := wholeNumber(m["max_output_tokens"])
		if kind == Embeddings {
			limit, ok = 0, true
		}
		if !ok || r.MaxTokens != limit || r.IncludeUsage || r.HiddenUsage() || (kind == Embeddings && r.Stream) {
			t.Fatalf("Parse(%v, %q): MaxTokens %d, IncludeUsage %v, HiddenUsage %v, Stream %v", kind, body, r.MaxTokens, r.IncludeUsage, r.HiddenUsage(), r.Stream)
		}
		if kind == Embeddings {
			checkEmbeddingsInput(t, body, m["input"], r)
		} else if !strings.HasSuffix(r.Prompt, GenerationPrompt) {
			t.Fatalf("Parse(%v, %q): Prompt %q does not end with the generation prompt", kind, body, r.Prompt)
		}
		if up, err := r.UpstreamBody(); err != nil || len(up) != len(body) || &up[0] != &body[0] {
			t.Fatalf("UpstreamBody of %q = %q, %v; want the body itself", body, up, err)
		}
		checkSetModel(t, kind, body, r)
	})
}

// checkEmbeddingsInput checks r's prompt and input tokens against encoding/json's reading of
// input.
func checkEmbeddingsInput(t *testing.T, body []byte, input json.RawMessage, r *Request) {
	t.Helper()
	var s string
	var strs []string
	var ids []float64
	var idss [][]float64
	want, tokens := "", int64(0)
	switch {
	case json.Unmarshal(input, &s) == nil:
		want, tokens = s, EstimateTokens(s)
	case json.Unmarshal(input, &strs) == nil:
		want = strings.Join(strs, "\n")
		tokens = EstimateTokens(want)
	case json.Unmarshal(input, &ids) == nil:
		tokens = int64(len(ids))
	case json.Unmarshal(input, &idss) == nil:
		for _, x := range idss {
			tokens += int64(len(x))
		}
	default:
		t.Fatalf("Parse accepted %q whose input %s is none of the accepted shapes", body, input)
	}
	if r.Prompt != want || r.InputTokens() != tokens || want == "" && tokens == 0 {
		t.Fatalf("Parse(embeddings, %q): Prompt %q, InputTokens %d; want %q, %d", body, r.Prompt, r.InputTokens(), want, tokens)
	}
}

// checkSetModel checks SetModel on a fresh parse of body (r's kind): UpstreamBody is valid
// JSON with model the new name and every other member as UpstreamBody had it before, and it
// parses as r does but for the model.
func checkSetModel(t *testing.T, kind Kind, body []byte, r *Request) {
	t.Helper()
	const name = `renamed "<model>"`
	before, err := r.UpstreamBody()
	if err != nil {
		t.Fatal(err)
	}
	orig := bytes.Clone(body)
	r2, err := Parse(kind, body)
	if err != nil {
		t.Fatal(err)
	}
	r2.SetModel(name)
	up, err := r2.UpstreamBody()
	if err != nil || !bytes.Equal(body, orig) {
		t.Fatalf("UpstreamBody after SetModel of %q: %v, or the body was modified", body, err)
	}
	var was, is map[string]json.RawMessage
	if json.Unmarshal(before, &was) != nil || json.Unmarshal(up, &is) != nil {
		t.Fatalf("UpstreamBody after SetModel of %q is not a JSON object: %q", body, up)
	}
	if string(is["model"]) != `"renamed \"<model>\""` || len(is) != len(was) {
		t.Fatalf("UpstreamBody after SetModel of %q = %q: model %s, %d members, want %d", body, up, is["model"], len(is), len(was))
	}
	for k, v := range was {
		var a, b bytes.Buffer
		if k != "model" && (json.Compact(&a, v) != nil || json.Compact(&b, is[k]) != nil || a.String() != b.String()) {
			t.Fatalf("UpstreamBody after SetModel of %q = %q: member %q is %s, was %s", body, up, k, is[k], v)
		}
	}
	again, err := Parse(kind, up)
	if err != nil {
		t.Fatalf("UpstreamBody after SetModel %q does not parse: %v", up, err)
	}
	if again.Model != name || again.Prompt != r.Prompt || again.Stream != r.Stream || again.MaxTokens != r.MaxTokens ||
		again.User != r.User || again.InputTokens() != r.InputTokens() || again.IncludeUsage != (r.IncludeUsage || r.HiddenUsage()) {
		t.Fatalf("UpstreamBody after SetModel %q parses as %+v, want %+v renamed", up, *again, *r)
	}
}
