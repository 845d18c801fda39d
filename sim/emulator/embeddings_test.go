package emulator

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// embeddingAnswer decodes an embeddings answer whatever its encoding.
type embeddingAnswer struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage map[string]int `json:"usage"`
}

// vector returns an answer's embedding i as floats, decoding base64 when it is a string.
func (a embeddingAnswer) vector(t *testing.T, i int) []float32 {
	t.Helper()
	var vec []float32
	if json.Unmarshal(a.Data[i].Embedding, &vec) == nil {
		return vec
	}
	var s string
	if err := json.Unmarshal(a.Data[i].Embedding, &s); err != nil {
		t.Fatalf("embedding %d is neither floats nor a string: %s", i, a.Data[i].Embedding)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		t.Fatalf("embedding %d: bad base64 %q: %v", i, s, err)
	}
	for j := 0; j < len(b); j += 4 {
		vec = append(vec, math.Float32frombits(binary.LittleEndian.Uint32(b[j:])))
	}
	return vec
}

func embedRequest(t *testing.T, url, body string) embeddingAnswer {
	t.Helper()
	resp := post(t, url+"/v1/embeddings", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var a embeddingAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestEmbeddings(t *testing.T) {
	_, ts := newTestServer(t)
	tests := []struct {
		name         string
		body         string
		prompts      []int // tokens of each input
		dims         int
		sameAsFloats string // when set, a float request whose vectors these must equal
	}{
		// "hello world" → BOS hell o worl d = 5 tokens.
		{"one string", `{"model":"m","input":"hello world"}`, []int{5}, 8, ""},
		// BOS a; BOS b c: 2 + 3 tokens, one engine request each.
		{"array of strings", `{"input":["a","b c"]}`, []int{2, 3}, 8, ""},
		// Token ids are the prompt as given: no BOS added.
		{"token ids", `{"input":[1,2,3,4]}`, []int{4}, 8, ""},
		{"arrays of token ids", `{"input":[[7],[8,9]]}`, []int{1, 2}, 8, ""},
		{"dimensions", `{"input":"hello world","dimensions":3}`, []int{5}, 3, ""},
		{"largest dimensions", `{"input":"x","dimensions":4096}`, []int{2}, 4096, ""},
		{"base64 decodes to the float answer", `{"input":["a","b c"],"encoding_format":"base64"}`, []int{2, 3}, 8,
			`{"input":["a","b c"],"encoding_format":"float"}`},
		// vLLM's embeddings request has no stream field and ignores it: the answer is whole JSON.
		{"stream is ignored", `{"input":"hello world","stream":true}`, []int{5}, 8, `{"input":"hello world"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := embedRequest(t, ts.URL, tt.body)
			if a.Object != "list" || a.Model != DefaultModel || !strings.HasPrefix(a.ID, "embd-") || len(a.Data) != len(tt.prompts) {
				t.Fatalf("answer = %+v, want a list of %d embeddings of model %q", a, len(tt.prompts), DefaultModel)
			}
			sum := 0
			for i, n := range tt.prompts {
				sum += n
				d := a.Data[i]
				if d.Object != "embedding" || d.Index != i {
					t.Errorf("data[%d] is object %q index %d", i, d.Object, d.Index)
				}
				vec := a.vector(t, i)
				if len(vec) != tt.dims {
					t.Fatalf("data[%d] has %d dimensions, want %d", i, len(vec), tt.dims)
				}
				norm := 0.0
				for _, v := range vec {
					norm += float64(v) * float64(v)
				}
				if math.Abs(norm-1) > 1e-5 {
					t.Errorf("data[%d] has squared norm %v, want 1", i, norm)
				}
			}
			want := map[string]int{"prompt_tokens": sum, "total_tokens": sum}
			if len(a.Usage) != 2 || a.Usage["prompt_tokens"] != sum || a.Usage["total_tokens"] != sum {
				t.Errorf("usage = %v, want %v", a.Usage, want)
			}
			if tt.sameAsFloats == "" {
				return
			}
			b := embedRequest(t, ts.URL, tt.sameAsFloats)
			for i := range tt.prompts {
				if got, want := a.vector(t, i), b.vector(t, i); !slices.Equal(got, want) {
					t.Errorf("data[%d] = %v, want %v as in %s", i, got, want, tt.sameAsFloats)
				}
			}
		})
	}
}

// TestEmbeddingsRunOnTheEngine shows an embedding's prompt goes through the engine's prefix cache:
// the second of two identical long inputs hits the blocks the first one computed.
func TestEmbeddingsRunOnTheEngine(t *testing.T) {
	s, ts := newTestServer(t)
	body, _ := json.Marshal(map[string]any{"input": longPrompt})
	first := embedRequest(t, ts.URL, string(body))
	hits1 := s.Metrics().PrefixCacheHits
	second := embedRequest(t, ts.URL, string(body))
	hits2 := s.Metrics().PrefixCacheHits
	prompt := first.Usage["prompt_tokens"]
	// All full blocks but the one holding the last token, as for a completion.
	if want := (prompt - 1) / 16 * 16; hits2-hits1 != int64(want) {
		t.Errorf("prefix cache hits went from %d to %d, want +%d", hits1, hits2, want)
	}
	if !slices.Equal(first.vector(t, 0), second.vector(t, 0)) {
		t.Error("the same input gave two different embeddings")
	}
}

func TestEmbeddingsBadRequests(t *testing.T) {
	_, ts := newTestServer(t)
	tooLong, _ := json.Marshal(map[string]any{"input": strings.Repeat("a ", 131072)}) // BOS + 131072 > max_model_len
	tests := []struct {
		name, body, want string
	}{
		{"bad JSON", `{"input":`, "invalid JSON"},
		{"missing input", `{"model":"m"}`, "input is required"},
		{"input a number", `{"input":42}`, "input must be a string, an array of strings"},
		{"mixed array", `{"input":["a",1]}`, "input must be a string, an array of strings"},
		{"empty array", `{"input":[]}`, "input must not be an empty array"},
		{"empty token list", `{"input":[[1],[]]}`, "input[1] must not be an empty array"},
		{"negative token id", `{"input":[5,-1]}`, "input[1] is not a token id"},
		{"token id too large", `{"input":[[4294967296]]}`, "input[0][0] is not a token id"},
		{"zero dimensions", `{"input":"a","dimensions":0}`, "dimensions must be in [1, 4096], got 0"},
		{"too many dimensions", `{"input":"a","dimensions":4097}`, "dimensions must be in [1, 4096], got 4097"},
		{"unknown encoding", `{"input":"a","encoding_format":"binary"}`, `encoding_format must be "float" or "base64", got "binary"`},
		{"too long for the model", string(tooLong), "max_model_len"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBadRequest(t, post(t, ts.URL+"/v1/embeddings", tt.body), tt.want)
		})
	}
}

// TestEmbeddingsFinishByStop checks request_success_total's reasons: vLLM finishes a pooling
// request as "stopped" as soon as its prompt is computed, and the emulator's completions by
// "length".
func TestEmbeddingsFinishByStop(t *testing.T) {
	_, ts := newTestServer(t)
	embedRequest(t, ts.URL, `{"input":["a","b"]}`) // two engine requests
	resp := post(t, ts.URL+"/v1/completions", `{"prompt":"hi","max_tokens":1}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`vllm:request_success_total{finished_reason="stop",model_name="` + DefaultModel + `"} 2`,
		`vllm:request_success_total{finished_reason="length",model_name="` + DefaultModel + `"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
}
