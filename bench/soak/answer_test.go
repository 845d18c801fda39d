package soak

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/emulator"
	"github.com/foresight-router/foresight/sim/testbed"
)

// sse writes events as a server-sent stream.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

func TestCheckStream(t *testing.T) {
	const (
		tok1   = `{"choices":[{"index":0,"text":" lorem","finish_reason":null}]}`
		tok2   = `{"choices":[{"index":0,"text":" ipsum","finish_reason":null}]}`
		fin    = `{"choices":[{"index":0,"text":"","finish_reason":"length"}]}`
		usage2 = `{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`
		usage3 = `{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}}`
		role   = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
		chat1  = `{"choices":[{"index":0,"delta":{"content":" lorem"},"finish_reason":null}]}`
		chat2  = `{"choices":[{"index":0,"delta":{"content":" ipsum"},"finish_reason":null}]}`
		chatF  = `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
	)
	plain := call{stream: true, maxTokens: 2}
	withUsage := call{stream: true, usage: true, maxTokens: 2}
	tests := []struct {
		name   string
		c      call
		stream string
		want   string // "" for a complete or cut answer, else the start of the problem
		cut    string // the error event's code (its message without one) of a cut stream
		silent bool   // ended without [DONE] and without an error event
	}{
		{name: "completion", c: plain, stream: sse(tok1, tok2, fin, "[DONE]")},
		{name: "completion with usage", c: withUsage, stream: sse(tok1, tok2, fin, usage2, "[DONE]")},
		{name: "chat", c: call{chat: true, stream: true, maxTokens: 2}, stream: sse(role, chat1, chat2, chatF, "[DONE]")},
		{name: "comments and CRLF", c: plain, stream: ": keep-alive\r\n\r\ndata: " + tok1 + "\r\n\r\n" + sse(tok2, fin, "[DONE]")},
		{name: "no [DONE]", c: plain, stream: sse(tok1, tok2, fin), want: "the stream ended without data: [DONE] and without an error event", silent: true},
		{name: "no [DONE] after one token", c: plain, stream: sse(tok1), want: "the stream ended without data: [DONE]", silent: true},
		{name: "cut short", c: plain, stream: sse(tok1, fin, "[DONE]"), want: "1 tokens, asked for 2"},
		{name: "a token too many", c: call{stream: true, maxTokens: 1}, stream: sse(tok1, tok2, fin, "[DONE]"), want: "2 tokens, asked for 1"},
		{name: "no finish reason", c: plain, stream: sse(tok1, tok2, "[DONE]"), want: "no finish_reason"},
		{name: "usage asked, none came", c: withUsage, stream: sse(tok1, tok2, fin, "[DONE]"), want: "no usage"},
		{name: "usage wrong", c: withUsage, stream: sse(tok1, tok2, fin, usage3, "[DONE]"), want: "usage.completion_tokens 3, asked for 2"},
		{name: "cut with an error event", c: plain, stream: sse(tok1, `{"error":{"message":"upstream reset","type":"server_error","code":"upstream_stream_broken"}}`),
			cut: "upstream_stream_broken"},
		{name: "cut with an error event without a code", c: plain, stream: sse(tok1, `{"error":{"message":"upstream reset","type":"server_error"}}`),
			cut: "upstream reset"},
		{name: "an event after the error event", c: plain, stream: sse(tok1, `{"error":{"message":"reset","code":"x"}}`, tok2),
			want: "an event after the error event", cut: "x"},
		{name: "[DONE] after the error event", c: plain, stream: sse(tok1, `{"error":{"message":"reset","code":"x"}}`, "[DONE]"),
			want: "an event after the error event", cut: "x"},
		{name: "not JSON", c: plain, stream: sse(tok1, `{"choices":`), want: "an event that is not JSON"},
		{name: "after [DONE]", c: plain, stream: sse(tok1, tok2, fin, "[DONE]", tok1), want: "an event after data: [DONE]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := checkStream(strings.NewReader(tt.stream), tt.c, time.Now())
			if !strings.HasPrefix(e.problem, tt.want) || (tt.want == "" && e.problem != "") {
				t.Errorf("problem %q, want %q", e.problem, tt.want)
			}
			if e.cut != tt.cut || e.silent != tt.silent {
				t.Errorf("cut %q, silent %v; want %q, %v", e.cut, e.silent, tt.cut, tt.silent)
			}
			if e.ttft <= 0 {
				t.Errorf("TTFT %v for a stream with tokens", e.ttft)
			}
		})
	}
}

func TestCheckWhole(t *testing.T) {
	c := call{maxTokens: 3}
	tests := []struct {
		name, body, want string
	}{
		{name: "completion", body: `{"choices":[{"text":" lorem ipsum dolor","finish_reason":"length"}],"usage":{"completion_tokens":3}}`},
		{name: "chat", body: `{"choices":[{"message":{"role":"assistant","content":" lorem ipsum dolor"},"finish_reason":"length"}],"usage":{"completion_tokens":3}}`},
		{name: "short", body: `{"choices":[{"text":" lorem","finish_reason":"length"}],"usage":{"completion_tokens":3}}`, want: "1 tokens, asked for 3"},
		{name: "no finish reason", body: `{"choices":[{"text":" lorem ipsum dolor"}],"usage":{"completion_tokens":3}}`, want: "no finish_reason"},
		{name: "no usage", body: `{"choices":[{"text":" lorem ipsum dolor","finish_reason":"length"}]}`, want: "no usage"},
		{name: "error", body: `{"error":{"message":"overloaded"}}`, want: "an error answered with 200: overloaded"},
		{name: "not JSON", body: `<html>`, want: "an answer that is not JSON: <html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkWhole(strings.NewReader(tt.body), c); got != tt.want {
				t.Errorf("problem %q, want %q", got, tt.want)
			}
		})
	}
}

// Every kind of call the mix draws, sent straight to an emulated server, gets an answer the
// checks find complete: they read the emulator as it answers.
func TestCallsAgainstTheEmulator(t *testing.T) {
	fleet, err := emulator.Start(1, 0, testbed.DefaultPreset, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	l := newLoad("http://"+fleet.Addrs()[0], 1, 5, nil)
	defer l.client.CloseIdleConnections()
	kinds := map[[3]bool]bool{}
	for n := range 32 {
		c := newCall(1, n, 5)
		kinds[[3]bool{c.chat, c.stream, c.usage}] = true
		if o := l.do(context.Background(), c); o.status != 200 || o.problem != "" {
			t.Errorf("%+v: status %d, %q", c, o.status, o.problem)
		}
	}
	// chat or not × whole, stream, stream with usage.
	if len(kinds) != 6 {
		t.Errorf("32 calls drew %d kinds, want all 6: %v", len(kinds), kinds)
	}
}

// The mix is the seed's: the same seed draws the same calls, another seed others; every call
// asks for 1 to maxTokens tokens.
func TestNewCall(t *testing.T) {
	same, tokens := true, map[int]bool{}
	for n := range 200 {
		c := newCall(7, n, 4)
		if c != newCall(7, n, 4) {
			t.Fatalf("call %d differs with the same seed", n)
		}
		o := newCall(8, n, 4)
		same = same && c.chat == o.chat && c.stream == o.stream && c.usage == o.usage && c.maxTokens == o.maxTokens
		tokens[c.maxTokens] = true
		if c.usage && !c.stream {
			t.Errorf("call %d asks a whole answer for stream_options", n)
		}
		if c.id != "soak-7-"+strconv.Itoa(n) {
			t.Errorf("call %d: id %q", n, c.id)
		}
	}
	if same {
		t.Error("seeds 7 and 8 drew the same calls")
	}
	if len(tokens) != 4 || !tokens[1] || !tokens[4] {
		t.Errorf("token counts drawn: %v, want 1 to 4", tokens)
	}
}
