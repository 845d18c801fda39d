package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/sim/emulator"
)

// startEmulator runs one emulated vLLM server on a loopback port and returns its base URL.
func startEmulator(t *testing.T) string {
	t.Helper()
	f, err := emulator.Start(1, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return "http://" + f.Addrs()[0]
}

// send parses a client body, as the router does, and posts its upstream body to the emulator.
func send(t *testing.T, base string, kind openai.Kind, body string) (*openai.Request, *http.Response) {
	t.Helper()
	req, err := openai.Parse(kind, []byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	up, err := req.UpstreamBody()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+kind.Path(), bytes.NewReader(up))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("emulator answered %s: %s", resp.Status, b)
	}
	return req, resp
}

func TestEmulatorStream(t *testing.T) {
	base := startEmulator(t)
	tests := []struct {
		name      string
		kind      openai.Kind
		body      string
		wantUsage bool // the client asked for usage and must see it
	}{
		{"chat, usage hidden", openai.Chat,
			`{"model":%q,"messages":[{"role":"user","content":"Tell me about prefix caching."}],"stream":true,"max_completion_tokens":12}`, false},
		{"completions, usage hidden", openai.Completions, `{"model":%q,"prompt":"Once upon a time","stream":true,"max_tokens":12}`, false},
		{"chat, usage asked", openai.Chat,
			`{"model":%q,"messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":12}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := send(t, base, tt.kind, fmt.Sprintf(tt.body, emulator.DefaultModel))
			if req.HiddenUsage() == tt.wantUsage {
				t.Fatalf("HiddenUsage = %v", req.HiddenUsage())
			}
			var client bytes.Buffer
			flushes := 0
			var first time.Time
			var lastN int64
			res, err := openai.Relay(&client, resp.Body, openai.RelayOptions{Flush: func() { flushes++ }, HideUsage: req.HiddenUsage(),
				OnFirst: func(at time.Time) { first = at }, OnTokens: func(n int64, _ time.Time) { lastN = n }})
			if err != nil {
				t.Fatalf("Relay: %v", err)
			}
			if got := strings.Contains(client.String(), `"usage"`); got != tt.wantUsage {
				t.Errorf("client saw usage: %v, want %v\n%s", got, tt.wantUsage, client.String())
			}
			if !strings.HasSuffix(client.String(), "data: [DONE]\n\n") || !res.Done {
				t.Errorf("stream did not end with [DONE] (Done %v)", res.Done)
			}
			if res.Usage == nil || res.Usage.CompletionTokens != req.MaxTokens || res.Usage.PromptTokens < 1 {
				t.Fatalf("usage %+v, want %d completion tokens", res.Usage, req.MaxTokens)
			}
			// The emulator sends one chunk per token (and, for chat, a role-only chunk first).
			if int64(res.Chunks) != req.MaxTokens || lastN != req.MaxTokens {
				t.Errorf("%d content chunks, onTokens last %d, want %d", res.Chunks, lastN, req.MaxTokens)
			}
			if !first.Equal(res.FirstContent) || res.FirstContent.IsZero() || res.Last.Before(res.FirstContent) {
				t.Errorf("first %v, FirstContent %v, Last %v", first, res.FirstContent, res.Last)
			}
			// Events arriving together (the last chunk, usage and [DONE]) share a flush.
			if n := strings.Count(client.String(), "\n\n"); flushes < 1 || flushes > n {
				t.Errorf("%d flushes for %d events", flushes, n)
			}
			if got := len(strings.Fields(res.Answer)); int64(got) != req.MaxTokens {
				t.Errorf("answer %q has %d words, want one per token (%d)", res.Answer, got, req.MaxTokens)
			}
		})
	}
}

func TestEmulatorWhole(t *testing.T) {
	base := startEmulator(t)
	tests := []struct {
		name string
		kind openai.Kind
		body string
	}{
		{"chat", openai.Chat, `{"model":%q,"messages":[{"role":"user","content":"Hi"}],"max_tokens":5}`},
		{"completions", openai.Completions, `{"model":%q,"prompt":["Once upon a time"],"max_tokens":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, resp := send(t, base, tt.kind, fmt.Sprintf(tt.body, emulator.DefaultModel))
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			answer, usage, err := openai.ReadWhole(req.Kind, body)
			if err != nil {
				t.Fatal(err)
			}
			if usage == nil || usage.CompletionTokens != req.MaxTokens {
				t.Errorf("usage %+v, want %d completion tokens", usage, req.MaxTokens)
			}
			if got := len(strings.Fields(answer)); int64(got) != req.MaxTokens {
				t.Errorf("answer %q has %d words, want %d", answer, got, req.MaxTokens)
			}
		})
	}
}
