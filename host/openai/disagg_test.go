package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// members decodes a JSON object's members for comparison.
func members(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

func TestPrefillBody(t *testing.T) {
	kv := map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil,
		"remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
	tests := []struct {
		name, body string
		kind       Kind
		rename     string
		want       map[string]any
	}{
		{"a stream with its options becomes one answer of one token", `{"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true},"max_tokens":90,"temperature":0.5}`,
			Completions, "", map[string]any{"model": "m", "prompt": "hi", "stream": false, "max_tokens": 1.0, "temperature": 0.5, "kv_transfer_params": kv}},
		{"chat's max_completion_tokens is one too; a renamed model is the engine's", `{"model":"alias","messages":[{"role":"user","content":"q"}],"max_completion_tokens":50}`,
			Chat, "base", map[string]any{"model": "base", "messages": []any{map[string]any{"role": "user", "content": "q"}}, "stream": false,
				"max_tokens": 1.0, "max_completion_tokens": 1.0, "kv_transfer_params": kv}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.kind, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.rename != "" {
				r.SetModel(tc.rename)
			}
			got, err := r.PrefillBody()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, members(t, got)); d != "" {
				t.Errorf("prefill body (-want +got):\n%s", d)
			}
		})
	}
	emb, err := Parse(Embeddings, []byte(`{"model":"m","input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emb.PrefillBody(); err == nil || emb.Disaggregable() {
		t.Errorf("an embeddings request has a prefill hop (err %v)", err)
	}
}

func TestDecodeBody(t *testing.T) {
	params := json.RawMessage(`{"do_remote_decode":false,"do_remote_prefill":true,"remote_engine_id":"e1","remote_block_ids":[1,2],"remote_host":"10.0.0.1","remote_port":8000}`)
	for _, body := range []string{
		`{"model":"m","prompt":"hi","stream":true}`,
		`{"model":"m","prompt":"hi","stream":true,"kv_transfer_params":{"do_remote_decode":true}}`, // the client's are replaced
	} {
		r, err := Parse(Completions, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		up, err := r.UpstreamBody()
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.DecodeBody(up, params)
		if err != nil {
			t.Fatal(err)
		}
		m := members(t, got)
		want := members(t, params)
		if d := cmp.Diff(want, m["kv_transfer_params"]); d != "" {
			t.Errorf("%s: kv_transfer_params (-want +got):\n%s", body, d)
		}
		if m["prompt"] != "hi" || m["stream"] != true || m["stream_options"] == nil {
			t.Errorf("%s: the decode body lost the upstream request's fields: %s", body, got)
		}
	}
}

func TestPrefillAnswer(t *testing.T) {
	got, err := PrefillAnswer([]byte(`{"id":"c","choices":[{"text":"x","finish_reason":"remote_decode"}],"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e1"}}`))
	if err != nil || string(got) != `{"do_remote_prefill":true,"remote_engine_id":"e1"}` {
		t.Errorf("PrefillAnswer = %s, %v", got, err)
	}
	for body, want := range map[string]string{
		`{"choices":[]}`:              "no kv_transfer_params",
		`{"kv_transfer_params":null}`: "no kv_transfer_params",
		`{"kv_transfer_params":[1]}`:  "not an object",
		`[1]`:                         "not a JSON object",
	} {
		if _, err := PrefillAnswer([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PrefillAnswer(%s) error %v, want one saying %q", body, err, want)
		}
	}
}
