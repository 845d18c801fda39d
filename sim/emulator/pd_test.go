package emulator

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/engine"
)

// newPDServer starts a server of the test preset with opts on an ephemeral 127.0.0.1 port.
func newPDServer(t *testing.T, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	cfg, err := engine.Preset(testPreset)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(cfg, "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// pdAnswer is the part of a completion the disaggregation tests read.
type pdAnswer struct {
	ID      string `json:"id"`
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage            *usage          `json:"usage"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
}

// postJSON posts body and returns the status and the body read.
func postJSON(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, url, string(b))
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// prefillKV is what a router sends with a prefill half: llm-d's sidecar and vLLM's proxy send
// the remote fields as null.
var prefillKV = map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
	"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}

// TestPrefillAnswer: a prefill half runs with its one token and answers with finish reason
// remote_decode and the kv_transfer_params naming this server and the prompt's blocks.
func TestPrefillAnswer(t *testing.T) {
	s, ts := newPDServer(t)
	addr := ts.Listener.Addr().String()
	host, port, _ := net.SplitHostPort(addr)
	prompt := longPrompt
	status, data := postJSON(t, ts.URL+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1, "kv_transfer_params": prefillKV})
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, data)
	}
	var a pdAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Choices) != 1 || a.Choices[0].FinishReason == nil || *a.Choices[0].FinishReason != "remote_decode" || a.Choices[0].Text == "" {
		t.Errorf("choices %s, want one token finished by remote_decode", data)
	}
	var kv struct {
		DoRemoteDecode  *bool   `json:"do_remote_decode"`
		DoRemotePrefill *bool   `json:"do_remote_prefill"`
		RemoteEngineID  string  `json:"remote_engine_id"`
		RemoteBlockIDs  []int64 `json:"remote_block_ids"`
		RemoteHost      string  `json:"remote_host"`
		RemotePort      int     `json:"remote_port"`
		TPSize          int     `json:"tp_size"`
		RemoteRequestID string  `json:"remote_request_id"`
	}
	if err := json.Unmarshal(a.KVTransferParams, &kv); err != nil {
		t.Fatalf("kv_transfer_params %s: %v", a.KVTransferParams, err)
	}
	wantPort, _ := strconv.Atoi(port)
	if kv.DoRemoteDecode == nil || *kv.DoRemoteDecode || kv.DoRemotePrefill == nil || !*kv.DoRemotePrefill ||
		kv.RemoteEngineID != EngineID(addr) || kv.RemoteHost != host || kv.RemotePort != wantPort || kv.TPSize != 1 || kv.RemoteRequestID != a.ID {
		t.Errorf("kv_transfer_params %s; want the flags swapped, engine %q, host %s, port %d, tp_size 1, request %s",
			a.KVTransferParams, EngineID(addr), host, wantPort, a.ID)
	}
	n := len(Tokenize(prompt))
	if want := (n + 15) / 16; len(kv.RemoteBlockIDs) != want {
		t.Errorf("%d block ids for a %d-token prompt, want %d", len(kv.RemoteBlockIDs), n, want)
	}
	blocks := s.Metrics().NumGPUBlocks
	for _, id := range kv.RemoteBlockIDs {
		if id < 1 || id >= int64(blocks) {
			t.Errorf("block id %d outside [1, %d)", id, blocks)
		}
	}
	if p := s.PD(); p.Prefills != 1 || p.Decodes != 0 {
		t.Errorf("counters %+v, want 1 prefill", p)
	}

	// The same prompt through chat names the same server; a request without kv_transfer_params
	// has none in its answer and ends by length.
	status, data = postJSON(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": prompt}},
		"max_completion_tokens": 1, "kv_transfer_params": prefillKV})
	if status != http.StatusOK || !strings.Contains(string(data), `"finish_reason":"remote_decode"`) || !strings.Contains(string(data), `"remote_engine_id":"`+EngineID(addr)+`"`) {
		t.Errorf("chat prefill: %d %s", status, data)
	}
	status, data = postJSON(t, ts.URL+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1})
	if status != http.StatusOK || strings.Contains(string(data), "kv_transfer_params") || !strings.Contains(string(data), `"finish_reason":"length"`) {
		t.Errorf("ordinary request: %d %s", status, data)
	}
	if p := s.PD(); p.Prefills != 2 {
		t.Errorf("counters %+v, want 2 prefills", p)
	}
}

// TestPDRefusals: a streamed prefill half, a decode half without its remote fields and malformed
// kv_transfer_params get a 400 naming the problem, and are not counted.
func TestPDRefusals(t *testing.T) {
	s, ts := newPDServer(t)
	decode := func(kv map[string]any) map[string]any {
		return map[string]any{"prompt": "Hello", "max_tokens": 2, "kv_transfer_params": kv}
	}
	tests := []struct {
		name, path string
		body       any
		param      string
		want       []string
	}{
		{"streamed prefill", "/v1/completions", map[string]any{"prompt": "Hello", "max_tokens": 1, "stream": true, "kv_transfer_params": prefillKV},
			"stream", []string{"Prefill does not support streaming"}},
		{"streamed chat prefill", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hi"}}, "stream": true, "kv_transfer_params": prefillKV},
			"stream", []string{"Prefill does not support streaming"}},
		{"decode without remote fields", "/v1/completions", decode(map[string]any{"do_remote_prefill": true, "remote_engine_id": nil}),
			kvParamsField, []string{"needs remote_engine_id, remote_host and remote_port", "missing or null: remote_engine_id, remote_host, remote_port"}},
		{"decode without a port", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "Hi"}},
			"kv_transfer_params": map[string]any{"do_remote_prefill": true, "remote_engine_id": "e", "remote_host": "10.0.0.1"}},
			kvParamsField, []string{"missing or null: remote_port"}},
		{"null", "/v1/completions", decode(nil), "", nil}, // no disaggregation: served
		{"an array", "/v1/completions", map[string]any{"prompt": "Hello", "kv_transfer_params": []int{1}},
			kvParamsField, []string{"kv_transfer_params must be an object, got [1]"}},
		{"both flags", "/v1/completions", decode(map[string]any{"do_remote_decode": true, "do_remote_prefill": true}),
			kvParamsField, []string{"do_remote_decode and do_remote_prefill cannot both be true"}},
		{"flag type", "/v1/completions", decode(map[string]any{"do_remote_decode": "yes"}),
			kvParamsField, []string{`kv_transfer_params.do_remote_decode must be a boolean, got "yes"`}},
		{"port range", "/v1/completions", decode(map[string]any{"do_remote_prefill": true, "remote_engine_id": "e", "remote_host": "h", "remote_port": 70000}),
			kvParamsField, []string{"kv_transfer_params.remote_port must be a port in [1, 65535], got 70000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, data := postJSON(t, ts.URL+tt.path, tt.body)
			if tt.want == nil {
				if status != http.StatusOK {
					t.Errorf("status %d: %s", status, data)
				}
				return
			}
			var e errorBody
			if err := json.Unmarshal(data, &e); err != nil || status != http.StatusBadRequest {
				t.Fatalf("status %d, body %s (%v)", status, data, err)
			}
			if e.Error.Type != "invalid_request_error" || e.Error.Param != tt.param || e.Error.Code != 400 {
				t.Errorf("error %+v, want type invalid_request_error, param %q, code 400", e.Error, tt.param)
			}
			for _, w := range tt.want {
				if !strings.Contains(e.Error.Message, w) {
					t.Errorf("message %q lacks %q", e.Error.Message, w)
				}
			}
		})
	}
	if p := s.PD(); p.Prefills+p.Decodes != 0 {
		t.Errorf("refused requests were counted: %+v", p)
	}
}

// TestPrefillThenDecode runs both hops on two servers, as a router does: the decode server,
// given the prefill answer's kv_transfer_params, streams its answer after pulling the prompt's KV
// (not before the transfer could have ended), counts the decode half under the prefill server's
// engine id, reports the pulled prompt as cached (vLLM's num_cached_tokens), and exports its
// counters.
func TestPrefillThenDecode(t *testing.T) {
	const perToken = time.Millisecond // a slow link: a 40-odd-token prompt pulls in 40-odd ms
	p, pts := newPDServer(t)
	d, dts := newPDServer(t, WithKVTransferLatency(0), WithKVTransferPerToken(perToken))
	prompt := "Summarise the history of the transistor, from the point-contact device of 1947 to planar integrated circuits."
	n := len(Tokenize(prompt))
	_, data := postJSON(t, pts.URL+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1, "kv_transfer_params": prefillKV})
	var a pdAnswer
	if err := json.Unmarshal(data, &a); err != nil || len(a.KVTransferParams) == 0 {
		t.Fatalf("prefill answer %s (%v)", data, err)
	}
	start := time.Now()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 3, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "kv_transfer_params": a.KVTransferParams})
	resp := post(t, dts.URL+"/v1/completions", string(body))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("decode: status %d: %s", resp.StatusCode, b)
	}
	chunks := readSSE(t, resp.Body)
	// A lower bound only: the engine cannot emit the first token before the KV has arrived,
	// however busy the host.
	if took := time.Since(start); took < time.Duration(n)*perToken {
		t.Errorf("decode answered in %v, before its %d-token transfer (%v) could end", took, n, time.Duration(n)*perToken)
	}
	if len(chunks) != 3+3 || chunks[len(chunks)-1] != "[DONE]" {
		t.Fatalf("decode stream %q, want 3 tokens, the finish, the usage and [DONE]", chunks)
	}
	u := decodeChunk(t, chunks[4]).Usage
	if u == nil || u.PromptTokens != n || u.CompletionTokens != 3 || u.PromptTokensDetails.CachedTokens != n-1 {
		t.Errorf("usage %+v, want %d prompt tokens of which %d cached (pulled), 3 completion tokens", u, n, n-1)
	}
	wantEngine := EngineID(pts.Listener.Addr().String())
	if got := d.PD(); got.Decodes != 1 || got.Prefills != 0 || got.RemoteEngines[wantEngine] != 1 || len(got.RemoteEngines) != 1 {
		t.Errorf("decode server counters %+v, want 1 decode from %s", got, wantEngine)
	}
	if got := p.PD(); got.Prefills != 1 || got.Decodes != 0 {
		t.Errorf("prefill server counters %+v, want 1 prefill", got)
	}
	resp2, err := http.Get(dts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	m, _ := io.ReadAll(resp2.Body)
	for _, line := range []string{
		`foresight_emulator_pd_prefill_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 0`,
		`foresight_emulator_pd_decode_requests_total{model_name="meta-llama/Llama-3.1-8B-Instruct"} 1`,
		"# TYPE foresight_emulator_pd_decode_requests_total counter",
	} {
		if !strings.Contains(string(m), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

// TestKVTransferOptions: the options override the preset's transfer cost, and a negative one is
// refused when the server starts.
func TestKVTransferOptions(t *testing.T) {
	cfg, err := engine.Preset(testPreset)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(cfg, "", WithKVTransferLatency(3*time.Millisecond), WithKVTransferPerToken(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.eng.Config().KVTransfer; got != (engine.KVTransfer{Latency: 3 * time.Millisecond, PerToken: time.Microsecond}) {
		t.Errorf("KV transfer %+v, want 3ms + 1µs per token", got)
	}
	s.Close()
	if _, err := NewServer(cfg, "", WithKVTransferPerToken(-time.Microsecond)); err == nil || !strings.Contains(err.Error(), "kv_transfer.per_token must be at least 0, got -1µs") {
		t.Errorf("a negative per-token time: %v", err)
	}
}
