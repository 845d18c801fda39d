package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetModel(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"say \"model\":\"a\""}]`
	tests := []struct {
		name  string
		kind  Kind
		body  string
		model string // SetModel's argument
		want  string // UpstreamBody byte for byte; "" when it is re-encoded (members checked instead)
	}{
		{"chat: only the model's value changes", Chat, `{"model":"a",` + msgs + `,"temperature":0.5}`, "b",
			`{"model":"b",` + msgs + `,"temperature":0.5}`},
		{"spacing and order kept", Completions, "{ \"prompt\": \"x\",\n  \"model\" : \"a\" , \"n\":1}", "llama-3-8b",
			"{ \"prompt\": \"x\",\n  \"model\" : \"llama-3-8b\" , \"n\":1}"},
		{"a name that needs escaping, HTML kept", Completions, `{"model":"a","prompt":"x"}`, `q"<b>`,
			`{"model":"q\"<b>","prompt":"x"}`},
		{"hidden usage inserted as before", Chat, `{"model":"a",` + msgs + `,"stream":true}`, "b",
			`{"stream_options":{"include_usage":true},"model":"b",` + msgs + `,"stream":true}`},
		{"hidden usage with stream_options: re-encoded with both", Chat,
			`{"model":"a",` + msgs + `,"stream":true,"stream_options":{"continuous_usage_stats":true}}`, "b", ""},
		{"an escaped key: re-encoded", Completions, `{"m\u006fdel":"a","prompt":"x","seed":1}`, "b", ""},
		{"a repeated member: re-encoded, one left", Completions, `{"model":"z","prompt":"x","model":"a"}`, "b", ""},
		{"responses: no usage to add", Responses, `{"model":"a","input":"x","stream":true}`, "b",
			`{"model":"b","input":"x","stream":true}`},
		{"embeddings", Embeddings, `{"input":[1,2],"model":"a"}`, "b", `{"input":[1,2],"model":"b"}`},
		{"the client's model again: the body itself", Chat, `{"model":"a",` + msgs + `}`, "a", `{"model":"a",` + msgs + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.kind, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			before := *r
			r.SetModel(tt.model)
			if r.Model != tt.model || r.ClientModel != before.Model {
				t.Errorf("Model %q ClientModel %q, want %q and the client's %q", r.Model, r.ClientModel, tt.model, before.Model)
			}
			up, err := r.UpstreamBody()
			if err != nil {
				t.Fatalf("UpstreamBody: %v", err)
			}
			if tt.want != "" && string(up) != tt.want {
				t.Errorf("UpstreamBody\n%s\nwant\n%s", up, tt.want)
			}
			if tt.model == before.Model && &up[0] != &r.body[0] {
				t.Errorf("UpstreamBody is a copy, want the client's body itself")
			}
			// Every member but model (and stream_options when usage is hidden) as the client sent it.
			var client, upstream map[string]any
			if err := json.Unmarshal([]byte(tt.body), &client); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(up, &upstream); err != nil {
				t.Fatalf("UpstreamBody is not JSON: %v\n%s", err, up)
			}
			if upstream["model"] != tt.model {
				t.Errorf("upstream model %v, want %q", upstream["model"], tt.model)
			}
			if r.HiddenUsage() {
				if so, _ := upstream["stream_options"].(map[string]any); so["include_usage"] != true {
					t.Errorf("stream_options %v upstream, want include_usage true", upstream["stream_options"])
				}
				client["stream_options"], upstream["stream_options"] = nil, nil
			}
			delete(client, "model")
			delete(upstream, "model")
			if diff := cmp.Diff(client, upstream); diff != "" {
				t.Errorf("other members changed upstream (-client +upstream):\n%s", diff)
			}
			// The engine reads the same request under the new name.
			again, err := Parse(tt.kind, up)
			if err != nil {
				t.Fatalf("Parse(UpstreamBody): %v", err)
			}
			if again.Model != tt.model || again.Prompt != r.Prompt || again.Stream != r.Stream || again.MaxTokens != r.MaxTokens {
				t.Errorf("Parse(UpstreamBody) = %+v, want %+v", *again, *r)
			}
		})
	}
}

func TestModelRename(t *testing.T) {
	rename := ModelRename{From: "llama-3-8b", To: "chat"}
	tests := []struct {
		name string
		m    ModelRename
		in   string
		want string // "" when in must come back itself
	}{
		{"a chunk", rename, `{"id":"c","object":"chat.completion.chunk","model":"llama-3-8b","choices":[]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"chat","choices":[]}`},
		{"a space after the colon, as Python writes it", rename, `{"id": "c", "model": "llama-3-8b"}`, `{"id": "c", "model": "chat"}`},
		{"nested, as responses events carry it", rename, `{"type":"response.completed","response":{"id":"r","model":"llama-3-8b","output":[]}}`,
			`{"type":"response.completed","response":{"id":"r","model":"chat","output":[]}}`},
		{"every occurrence", rename, `{"model":"llama-3-8b","data":[{"model":"llama-3-8b"}]}`, `{"model":"chat","data":[{"model":"chat"}]}`},
		// Inside a string quotes are escaped: the bytes "model":"llama-3-8b" with bare quotes
		// cannot occur there, so content that quotes a member is never renamed.
		{"content quoting the member stays", rename,
			`{"choices":[{"delta":{"content":"the \"model\":\"llama-3-8b\" field"}}],"x":"\\"}`, ""},
		{"tool-call arguments quoting it stay", rename, `{"arguments":"{\"model\": \"llama-3-8b\"}"}`, ""},
		{"another name that starts with From stays", rename, `{"model":"llama-3-8b-instruct"}`, ""},
		{"another member ending in model stays", rename, `{"my_model":"llama-3-8b","models":"llama-3-8b"}`, ""},
		{"a model that is not a string stays", rename, `{"model":{"name":"llama-3-8b"}}`, ""},
		{"names JSON-escaped", ModelRename{From: `a"b\c`, To: "é<"}, `{"model":"a\"b\\c"}`, `{"model":"é<"}`},
		{"the zero rename changes nothing", ModelRename{}, `{"model":""}`, ""},
		{"From == To changes nothing", ModelRename{From: "m", To: "m"}, `{"model":"m"}`, ""},
		{"no member: unchanged", rename, `{"choices":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			got := tt.m.Apply(in)
			if tt.want == "" {
				if string(got) != tt.in || &got[0] != &in[0] {
					t.Errorf("Apply = %s, want the input itself", got)
				}
				return
			}
			if string(got) != tt.want {
				t.Errorf("Apply\n%s\nwant\n%s", got, tt.want)
			}
			if string(in) != tt.in {
				t.Errorf("Apply modified its input: %s", in)
			}
		})
	}
}

// Rename applies to every event the relay writes, whatever else it does to it, and keeps the
// event's other lines.
func TestRelayRename(t *testing.T) {
	usage := `data: {"id":"c","model":"m","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1}}` + "\n\n"
	quoting := `data: {"model":"m","choices":[{"index":0,"delta":{"content":"\"model\":\"m\""}}]}` + "\n\n"
	events := []string{": ping\n\n", "id: 1\r\n" + strings.ReplaceAll(chatLorem, "\n", "\r\n"), quoting, chatStop, usage, done}
	want := []string{": ping\n\n", "id: 1\r\n" + strings.ReplaceAll(strings.Replace(chatLorem, `"model":"m"`, `"model":"client"`, 1), "\n", "\r\n"),
		strings.Replace(quoting, `{"model":"m"`, `{"model":"client"`, 1), strings.Replace(chatStop, `"model":"m"`, `"model":"client"`, 1),
		done} // the usage chunk hidden
	var dst strings.Builder
	res, err := Relay(&dst, strings.NewReader(strings.Join(events, "")), RelayOptions{HideUsage: true, Rename: ModelRename{From: "m", To: "client"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := dst.String(); got != strings.Join(want, "") {
		t.Errorf("client got\n%q\nwant\n%q", got, strings.Join(want, ""))
	}
	if res.Answer != ` lorem"model":"m"` || !res.Done || res.Usage == nil || res.Usage.PromptTokens != 4 {
		t.Errorf("result %+v: the answer and usage are read as sent", res)
	}
}
