package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/engine"
)

const testPreset = "llama-3.1-8b-h100-tp1"

func newTestServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	cfg, err := engine.Preset(testPreset)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(cfg, "")
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

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readSSE returns the data payloads of an SSE stream, in order.
func readSSE(t *testing.T, r io.Reader) []string {
	t.Helper()
	var data []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		data = append(data, d)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return data
}

type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func decodeChunk(t *testing.T, s string) chunk {
	t.Helper()
	var c chunk
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return c
}

// longPrompt is about 300 tokens: long enough for many full 16-token blocks.
var longPrompt = strings.Repeat("You are a helpful assistant answering questions about the history of computing. ", 20)

func TestStreamingCompletion(t *testing.T) {
	_, ts := newTestServer(t)
	const n = 5
	prompt := "Hello, world! Tell me a story."
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": n, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	resp := post(t, ts.URL+"/v1/completions", string(body))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	data := readSSE(t, resp.Body)
	// n token chunks + finish chunk + usage chunk + [DONE]
	if len(data) != n+3 {
		t.Fatalf("got %d chunks, want %d: %q", len(data), n+3, data)
	}
	for i, d := range data[:n] {
		c := decodeChunk(t, d)
		if len(c.Choices) != 1 || c.Choices[0].Text == "" || c.Choices[0].FinishReason != nil {
			t.Errorf("token chunk %d = %s", i, d)
		}
	}
	fin := decodeChunk(t, data[n])
	if len(fin.Choices) != 1 || fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "length" {
		t.Errorf("finish chunk = %s", data[n])
	}
	u := decodeChunk(t, data[n+1])
	want := usage{PromptTokens: len(Tokenize(prompt)), CompletionTokens: n, TotalTokens: len(Tokenize(prompt)) + n}
	if len(u.Choices) != 0 || u.Usage == nil || *u.Usage != want {
		t.Errorf("usage chunk = %s, want usage %+v", data[n+1], want)
	}
	if data[n+2] != "[DONE]" {
		t.Errorf("last chunk = %q, want [DONE]", data[n+2])
	}
}

func TestStreamingChat(t *testing.T) {
	_, ts := newTestServer(t)
	const n = 3
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3,"stream":true}`)
	defer resp.Body.Close()
	data := readSSE(t, resp.Body)
	// role chunk + n content chunks + finish chunk + [DONE] (no usage without include_usage)
	if len(data) != n+3 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("chunks = %q", data)
	}
	first := decodeChunk(t, data[0])
	if first.Object != "chat.completion.chunk" || first.Choices[0].Delta == nil || first.Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk = %s", data[0])
	}
	for _, d := range data[1 : n+1] {
		c := decodeChunk(t, d)
		if c.Choices[0].Delta == nil || c.Choices[0].Delta.Content == nil || *c.Choices[0].Delta.Content == "" {
			t.Errorf("content chunk = %s", d)
		}
	}
	if fin := decodeChunk(t, data[n+1]); fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "length" {
		t.Errorf("finish chunk = %s", data[n+1])
	}
}

func TestChatNonStreaming(t *testing.T) {
	_, ts := newTestServer(t)
	resp := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi there"}]}],"max_tokens":4}`)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var c chunk
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	// The router's rendering: BOS < | syst em | > be brie f < | user | > hi ther e < | assi stan t | > = 25
	wantPrompt := len(Tokenize("<|system|>\nbe brief\n<|user|>\nhi there\n<|assistant|>\n"))
	if wantPrompt != 25 {
		t.Fatalf("prompt tokens = %d, want 25", wantPrompt)
	}
	if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message == nil || c.Choices[0].Message.Role != "assistant" {
		t.Fatalf("response = %+v", c)
	}
	if got := len(strings.Fields(c.Choices[0].Message.Content)); got != 4 {
		t.Errorf("content %q has %d words, want 4", c.Choices[0].Message.Content, got)
	}
	want := usage{PromptTokens: wantPrompt, CompletionTokens: 4, TotalTokens: wantPrompt + 4}
	if c.Usage == nil || *c.Usage != want {
		t.Errorf("usage = %+v, want %+v", c.Usage, want)
	}
}

func TestPrefixCacheHit(t *testing.T) {
	_, ts := newTestServer(t)
	complete := func() usage {
		body, _ := json.Marshal(map[string]any{"prompt": longPrompt, "max_tokens": 2})
		resp := post(t, ts.URL+"/v1/completions", string(body))
		defer resp.Body.Close()
		var c chunk
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Usage == nil {
			t.Fatalf("decoding response: %v, usage %v", err, c.Usage)
		}
		return *c.Usage
	}
	first := complete()
	hits1 := scrape(t, ts.URL)["vllm:prefix_cache_hits_total"]
	second := complete()
	hits2 := scrape(t, ts.URL)["vllm:prefix_cache_hits_total"]
	if first.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("first request cached %d tokens, want 0", first.PromptTokensDetails.CachedTokens)
	}
	// The identical prompt hits all its full blocks but the one holding the last token.
	want := (second.PromptTokens - 1) / 16 * 16
	if second.PromptTokensDetails.CachedTokens != want {
		t.Errorf("second request cached %d tokens, want %d", second.PromptTokensDetails.CachedTokens, want)
	}
	if hits2-hits1 != float64(want) {
		t.Errorf("prefix_cache_hits_total went from %v to %v, want +%d", hits1, hits2, want)
	}
}

// scrape returns /metrics as series (name with labels stripped) → value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics status %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, val, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad metrics line %q", line)
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		name, _, _ := strings.Cut(series, "{")
		out[name] = v
	}
	return out
}

func TestMetrics(t *testing.T) {
	s, ts := newTestServer(t)
	got := scrape(t, ts.URL)
	for _, name := range []string{
		"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
		"vllm:cache_config_info", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
		"vllm:num_preemptions_total",
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := `vllm:cache_config_info{block_size="16",num_gpu_blocks="` + strconv.Itoa(s.Metrics().NumGPUBlocks) + `"} 1`
	if !strings.Contains(string(b), want) {
		t.Errorf("metrics lack %q:\n%s", want, b)
	}
	if !strings.Contains(string(b), `vllm:num_requests_running{model_name="`+DefaultModel+`"} 0`) {
		t.Errorf("metrics lack labelled running gauge:\n%s", b)
	}
}

func TestModelsAndHealth(t *testing.T) {
	_, ts := newTestServer(t)
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health status %d", resp.StatusCode)
	}
	resp, err = http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		t.Fatal(err)
	}
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != DefaultModel {
		t.Errorf("models = %+v", models)
	}
}

func TestBadRequests(t *testing.T) {
	_, ts := newTestServer(t)
	tests := []struct {
		name, path, body, want string
	}{
		{"bad JSON", "/v1/completions", `{"prompt":`, "invalid JSON"},
		{"missing prompt", "/v1/completions", `{"max_tokens":3}`, "prompt is required"},
		{"prompt not a string", "/v1/completions", `{"prompt":42}`, "prompt must be a string"},
		{"zero max_tokens", "/v1/completions", `{"prompt":"hi","max_tokens":0}`, "max_tokens must be at least 1"},
		{"negative max_tokens", "/v1/completions", `{"prompt":"hi","max_tokens":-2,"stream":true}`, "max_tokens must be at least 1"},
		{"too long for the model", "/v1/completions", `{"prompt":"hi","max_tokens":200000}`, "max_model_len"},
		{"chat missing messages", "/v1/chat/completions", `{"max_tokens":3}`, "messages is required"},
		{"chat bad max_completion_tokens", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":0}`, "max_completion_tokens must be at least 1"},
		{"chat bad JSON", "/v1/chat/completions", `[]`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBadRequest(t, post(t, ts.URL+tt.path, tt.body), tt.want)
		})
	}
}

func TestFleet(t *testing.T) {
	f, err := Start(2, 0, testPreset, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	addrs := f.Addrs()
	if len(addrs) != 2 || addrs[0] == addrs[1] {
		t.Fatalf("addrs = %q, want two distinct", addrs)
	}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("address %q not on 127.0.0.1", a)
		}
		resp := post(t, "http://"+a+"/v1/completions", `{"prompt":"ping","max_tokens":1}`)
		var c chunk
		err := json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || c.Usage == nil || c.Usage.CompletionTokens != 1 {
			t.Errorf("server %s: status %d, err %v, usage %+v", a, resp.StatusCode, err, c.Usage)
		}
	}
	if _, err := Start(1, 0, "no-such-preset", 1); err == nil {
		t.Error("Start with an unknown preset succeeded")
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		name, text string
		want       int // tokens including BOS
	}{
		{"empty", "", 1},                                // BOS
		{"words", "hello big world", 6},                 // BOS hell o big worl d
		{"punctuation", "a, b!", 5},                     // BOS a , b !
		{"long word cut every 4", "abcdefghij", 4},      // BOS abcd efgh ij
		{"whitespace only separates", "  a \n\t b ", 3}, // BOS a b
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tokenize(tt.text)
			if len(got) != tt.want {
				t.Errorf("Tokenize(%q) has %d tokens, want %d", tt.text, len(got), tt.want)
			}
			if !slices.Equal(got, Tokenize(tt.text)) {
				t.Errorf("Tokenize(%q) is not deterministic", tt.text)
			}
		})
	}
	if slices.Equal(Tokenize("cat"), Tokenize("dog")) {
		t.Error("different words give the same tokens")
	}
}

func TestBlockHashesSharePrefix(t *testing.T) {
	a := Tokenize(longPrompt + "What was ENIAC?")
	b := Tokenize(longPrompt + "Who built the Z3?")
	ha, hb := BlockHashes(a, 16), BlockHashes(b, 16)
	if len(ha) != len(a)/16 || len(hb) != len(b)/16 {
		t.Fatalf("got %d and %d hashes for %d and %d tokens", len(ha), len(hb), len(a), len(b))
	}
	common := 0
	for common < len(a) && common < len(b) && a[common] == b[common] {
		common++
	}
	shared := 0
	for shared < len(ha) && shared < len(hb) && ha[shared] == hb[shared] {
		shared++
	}
	// Exactly the blocks fully inside the common token prefix are shared.
	if want := common / 16; shared != want {
		t.Errorf("%d shared block hashes, want %d (common prefix %d tokens)", shared, want, common)
	}
	if shared == 0 {
		t.Error("no shared blocks for a long shared prefix")
	}
	if !slices.Equal(ha, BlockHashes(a, 16)) {
		t.Error("BlockHashes is not deterministic")
	}
}

func TestConcurrentRequests(t *testing.T) {
	s, ts := newTestServer(t)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for i := range clients {
		wg.Go(func() {
			body, _ := json.Marshal(map[string]any{"prompt": longPrompt + strconv.Itoa(i), "max_tokens": 4, "stream": i%2 == 0,
				"stream_options": map[string]any{"include_usage": true}})
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"completion_tokens":4`) {
				errs <- fmt.Sprintf("client %d: status %d, body %s", i, resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// Every request queried its whole prompt once.
	if m := s.Metrics(); m.PrefixCacheQueries == 0 || m.PrefixCacheHits == 0 {
		t.Errorf("metrics after shared-prefix load = %+v, want queries and hits", m)
	}
}

func TestClientDisconnect(t *testing.T) {
	srv, ts := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"tell me everything","max_tokens":5000,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, err %v", line, err)
	}
	if m := srv.Metrics(); m.Running != 1 {
		t.Fatalf("running %d while the request streams", m.Running)
	}
	cancel()
	resp.Body.Close()
	// The engine aborts the request, as vLLM does, instead of generating 5,000 tokens for nobody.
	deadline := time.Now().Add(5 * time.Second)
	for m := srv.Metrics(); m.Running+m.Waiting != 0 || m.KVCacheUsage != 0; m = srv.Metrics() {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the client left: %+v", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The server keeps serving others.
	resp = post(t, ts.URL+"/v1/completions", `{"prompt":"still there?","max_tokens":2}`)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status after a disconnect = %d", resp.StatusCode)
	}
}

// wantBadRequest checks that resp is the emulator's 400: an invalid_request_error whose message
// holds want. It closes resp's body.
func wantBadRequest(t *testing.T, resp *http.Response, want string) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	var e errorBody
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, want) {
		t.Errorf("error = %+v, want type invalid_request_error and a message containing %q", e.Error, want)
	}
}
