package openai

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// clock returns a now that starts at t0 and advances 10 ms per call.
func clock() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return t0.Add(time.Duration(n*10) * time.Millisecond)
	}
}

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// Recorded streams in vLLM's shape (as sim/emulator writes them), each event one string.
const (
	chatHead = `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[`
	cmplHead = `data: {"id":"cmpl-7","object":"text_completion","created":1767225600,"model":"m","choices":[`
)

var (
	chatRole  = chatHead + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	chatLorem = chatHead + `{"index":0,"delta":{"content":" lorem"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	chatIpsum = chatHead + `{"index":0,"delta":{"content":" ipsum"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	chatDolor = chatHead + `{"index":0,"delta":{"content":" dolor"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	chatStop  = chatHead + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"length","stop_reason":null}]}` + "\n\n"
	chatUsage = `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1767225600,"model":"m","choices":[],` +
		`"usage":{"prompt_tokens":40,"total_tokens":43,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":32}}}` + "\n\n"
	done = "data: [DONE]\n\n"

	cmplLorem = cmplHead + `{"index":0,"text":" lorem","logprobs":null,"finish_reason":null}]}` + "\n\n"
	cmplIpsum = cmplHead + `{"index":0,"text":" ipsum","logprobs":null,"finish_reason":null}]}` + "\n\n"
	cmplStop  = cmplHead + `{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}` + "\n\n"
	cmplUsage = `data: {"id":"cmpl-7","object":"text_completion","created":1767225600,"model":"m","choices":[],` +
		`"usage":{"prompt_tokens":9,"total_tokens":11,"completion_tokens":2}}` + "\n\n"
)

// recorder is a dst that counts writes and flushes, and the writes not flushed yet.
type recorder struct {
	bytes.Buffer
	writes, flushes, unflushed int
}

func (r *recorder) Write(p []byte) (int, error) { r.writes++; r.unflushed++; return r.Buffer.Write(p) }
func (r *recorder) flush()                      { r.flushes++; r.unflushed = 0 }

// pacedSource hands out one piece per Read, as an engine's stream arrives, and fails the test if
// anything written to dst is still unflushed when Relay reads on: such a write would wait on the
// engine's next event.
type pacedSource struct {
	t      *testing.T
	pieces []string
	dst    *recorder
}

func (s *pacedSource) Read(p []byte) (int, error) {
	if s.dst.unflushed > 0 {
		s.t.Errorf("Relay reads on with %d writes unflushed", s.dst.unflushed)
	}
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.pieces[0])
	if s.pieces[0] = s.pieces[0][n:]; s.pieces[0] == "" {
		s.pieces = s.pieces[1:]
	}
	return n, nil
}

func TestRelay(t *testing.T) {
	type call struct {
		n  int64
		at time.Time
	}
	tests := []struct {
		name   string
		events []string
		hide   bool
		want   []string // events the client gets
		res    StreamResult
		tokens []call // onTokens calls
	}{
		{
			name:   "chat with usage asked: byte-identical",
			events: []string{chatRole, chatLorem, chatIpsum, chatDolor, chatStop, chatUsage, done},
			want:   []string{chatRole, chatLorem, chatIpsum, chatDolor, chatStop, chatUsage, done},
			// The clock ticks once per content chunk: 10, 20, 30 ms. The role-only delta is not content.
			res: StreamResult{FirstContent: ms(10), Last: ms(30), Usage: &Usage{PromptTokens: 40, CompletionTokens: 3, CachedTokens: 32},
				Answer: " lorem ipsum dolor", Done: true, Chunks: 3},
			tokens: []call{{1, ms(10)}, {2, ms(20)}, {3, ms(30)}},
		},
		{
			name:   "chat with hidden usage: the usage chunk is dropped",
			events: []string{chatRole, chatLorem, chatIpsum, chatDolor, chatStop, chatUsage, done},
			hide:   true,
			want:   []string{chatRole, chatLorem, chatIpsum, chatDolor, chatStop, done},
			res: StreamResult{FirstContent: ms(10), Last: ms(30), Usage: &Usage{PromptTokens: 40, CompletionTokens: 3, CachedTokens: 32},
				Answer: " lorem ipsum dolor", Done: true, Chunks: 3},
			tokens: []call{{1, ms(10)}, {2, ms(20)}, {3, ms(30)}},
		},
		{
			name:   "completions with hidden usage, no cached-token detail",
			events: []string{cmplLorem, cmplIpsum, cmplStop, cmplUsage, done},
			hide:   true,
			want:   []string{cmplLorem, cmplIpsum, cmplStop, done},
			res: StreamResult{FirstContent: ms(10), Last: ms(20), Usage: &Usage{PromptTokens: 9, CompletionTokens: 2},
				Answer: " lorem ipsum", Done: true, Chunks: 2},
			tokens: []call{{1, ms(10)}, {2, ms(20)}},
		},
		{
			name:   "hidden usage on a stream without usage changes nothing",
			events: []string{cmplLorem, cmplStop, done},
			hide:   true,
			want:   []string{cmplLorem, cmplStop, done},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Answer: " lorem", Done: true, Chunks: 1},
			tokens: []call{{1, ms(10)}},
		},
		{
			name: "comments, event fields, CRLF and multi-line data pass through intact",
			events: []string{
				": ping\n\n",
				"event: message\r\nid: 1\r\n" + strings.ReplaceAll(chatLorem, "\n", "\r\n"),
				"data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\" ipsum\"}}]}\n\n",
				": keep-alive\r\n\r\n",
				"\n", // a stray blank line
				"retry: 1000\n\n",
				"data: [DONE]\r\n\r\n",
			},
			want: []string{
				": ping\n\n",
				"event: message\r\nid: 1\r\n" + strings.ReplaceAll(chatLorem, "\n", "\r\n"),
				"data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\" ipsum\"}}]}\n\n",
				": keep-alive\r\n\r\n",
				"\n",
				"retry: 1000\n\n",
				"data: [DONE]\r\n\r\n",
			},
			res:    StreamResult{FirstContent: ms(10), Last: ms(20), Answer: " lorem ipsum", Done: true, Chunks: 2},
			tokens: []call{{1, ms(10)}, {2, ms(20)}},
		},
		{
			name: "hidden usage: a usage member on a content chunk is removed, the rest kept byte for byte",
			events: []string{
				"data: {\"id\":\"c\", \"choices\":[{\"index\":0,\"text\":\" a\"}], \"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n",
				"data: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2},\"choices\":[{\"index\":0,\"text\":\" b\"}]}\r\n\r\n",
				"id: 3\ndata: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\ndata: \"usage\":null}\n\n",
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n",
				": a multi-line chunk with usage keeps its lines\r\ndata: {\"choices\":[],\r\ndata: \"id\":\"c\",\r\ndata: \"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\r\n\r\n",
				"data: {\"choices\":[{\"index\":0,\"text\":\"\"}],\ndata: \"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2},\ndata: \"id\":\"c\"}\n\n",
			},
			hide: true,
			want: []string{
				"data: {\"id\":\"c\", \"choices\":[{\"index\":0,\"text\":\" a\"}]}\n\n",
				"data: {\"choices\":[{\"index\":0,\"text\":\" b\"}]}\r\n\r\n",
				// usage null is what the client would see anyway: untouched.
				"id: 3\ndata: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\ndata: \"usage\":null}\n\n",
				// a usage-only chunk is dropped however it is split; a chunk with choices loses only its usage member
				"data: {\"choices\":[{\"index\":0,\"text\":\"\"}],\ndata: \"id\":\"c\"}\n\n",
			},
			res:    StreamResult{FirstContent: ms(10), Last: ms(20), Usage: &Usage{PromptTokens: 5, CompletionTokens: 2}, Answer: " a b", Chunks: 2},
			tokens: []call{{1, ms(10)}, {2, ms(20)}},
		},
		{
			name: "tool-call and reasoning deltas are content, not answer; other choices are not the answer",
			events: []string{
				chatRole,
				chatHead + `{"index":0,"delta":{"reasoning_content":"thinking"}}]}` + "\n\n",
				chatHead + `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}` + "\n\n",
				chatHead + `{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}` + "\n\n",
				chatHead + `{"index":0,"delta":{"content":null,"tool_calls":[]}}]}` + "\n\n",
			},
			want: []string{
				chatRole,
				chatHead + `{"index":0,"delta":{"reasoning_content":"thinking"}}]}` + "\n\n",
				chatHead + `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}` + "\n\n",
				chatHead + `{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}` + "\n\n",
				chatHead + `{"index":0,"delta":{"content":null,"tool_calls":[]}}]}` + "\n\n",
			},
			res:    StreamResult{FirstContent: ms(10), Last: ms(30), Answer: "mine", Chunks: 3},
			tokens: []call{{1, ms(10)}, {2, ms(20)}, {3, ms(30)}},
		},
		{
			name:   "an error event and a last event without its blank line pass through",
			events: []string{cmplLorem, `data: {"error":{"message":"engine died","code":500}}` + "\n\n", "data: [DONE]"},
			hide:   true,
			want:   []string{cmplLorem, `data: {"error":{"message":"engine died","code":500}}` + "\n\n", "data: [DONE]"},
			// What was written ends inside that last event: Partial says so.
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Answer: " lorem", Done: true, Chunks: 1, Partial: true},
			tokens: []call{{1, ms(10)}},
		},
		{
			// EOF without [DONE] is no error of Relay's: Done false tells the caller it was cut.
			name:   "a stream ending without [DONE] is not done",
			events: []string{cmplLorem},
			want:   []string{cmplLorem},
			res:    StreamResult{FirstContent: ms(10), Last: ms(10), Answer: " lorem", Chunks: 1},
			tokens: []call{{1, ms(10)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst recorder
			var firsts []time.Time
			var tokens []call
			src := &pacedSource{t: t, pieces: slices.Clone(tt.events), dst: &dst}
			res, err := Relay(&dst, src, RelayOptions{Flush: dst.flush, HideUsage: tt.hide, Now: clock(),
				OnFirst:  func(at time.Time) { firsts = append(firsts, at) },
				OnTokens: func(n int64, at time.Time) { tokens = append(tokens, call{n, at}) }})
			if err != nil {
				t.Fatalf("Relay: %v", err)
			}
			if got, want := dst.String(), strings.Join(tt.want, ""); got != want {
				t.Errorf("client got\n%q\nwant\n%q", got, want)
			}
			if dst.writes != len(tt.want) || dst.flushes != len(tt.want) || dst.unflushed != 0 {
				t.Errorf("%d writes and %d flushes (%d writes unflushed at the end), want one of each per event (%d)",
					dst.writes, dst.flushes, dst.unflushed, len(tt.want))
			}
			if diff := cmp.Diff(tt.res, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if tt.res.Chunks > 0 && (len(firsts) != 1 || !firsts[0].Equal(tt.res.FirstContent)) {
				t.Errorf("onFirst calls %v, want one at %v", firsts, tt.res.FirstContent)
			}
			if diff := cmp.Diff(tt.tokens, tokens, cmp.AllowUnexported(call{})); diff != "" {
				t.Errorf("onTokens calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRelayNilCallbacks(t *testing.T) {
	var dst bytes.Buffer
	res, err := Relay(&dst, strings.NewReader(cmplLorem+done), RelayOptions{Now: clock()})
	if err != nil || res.Chunks != 1 || dst.String() != cmplLorem+done {
		t.Errorf("Relay = %+v, %v; client got %q", res, err, dst.String())
	}
}

// failingWriter fails every write after the first ok ones.
type failingWriter struct {
	ok  int
	err error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.ok == 0 {
		return 0, w.err
	}
	w.ok--
	return len(p), nil
}

func TestRelayClientGone(t *testing.T) {
	gone := errors.New("broken pipe")
	src := strings.NewReader(strings.Join([]string{chatRole, chatLorem, chatIpsum, chatDolor, chatStop, chatUsage, done}, ""))
	res, err := Relay(&failingWriter{ok: 2, err: gone}, src, RelayOptions{HideUsage: true, Now: clock()})
	if err != gone {
		t.Fatalf("Relay error = %v, want the writer's error as is", err)
	}
	// The role chunk and " lorem" were written; " ipsum" failed and is not counted.
	if res.Chunks != 1 || res.Answer != " lorem" || res.Done {
		t.Errorf("result %+v, want 1 chunk, answer \" lorem\", not done", res)
	}
}

// Done says the client was sent [DONE]: not when writing it failed, and still when what follows
// it fails.
func TestRelayDoneIsWritten(t *testing.T) {
	gone := errors.New("broken pipe")
	stream := chatRole + chatLorem + chatStop + done
	res, err := Relay(&failingWriter{ok: 3, err: gone}, strings.NewReader(stream), RelayOptions{Now: clock()})
	if err != gone || res.Done {
		t.Errorf("[DONE]'s write failed: Relay = %+v, %v; want the error and not done", res, err)
	}
	reset := errors.New("connection reset by peer")
	res, err = Relay(io.Discard, &errReader{data: stream, err: reset}, RelayOptions{Now: clock()})
	if !errors.Is(err, reset) || !res.Done {
		t.Errorf("the source failed after [DONE]: Relay = %+v, %v; want the error and done", res, err)
	}
}

// errReader returns its data, then err.
type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestRelayUpstreamFails(t *testing.T) {
	reset := errors.New("connection reset by peer")
	var dst bytes.Buffer
	res, err := Relay(&dst, &errReader{data: cmplLorem + cmplIpsum[:20], err: reset}, RelayOptions{Now: clock()})
	var se *SourceError
	if !errors.As(err, &se) || !errors.Is(err, reset) {
		t.Fatalf("Relay error = %v, want a *SourceError wrapping the read error", err)
	}
	// The part of an event the break cut is not passed on: the client's stream ends between
	// events, where the caller can add an error event.
	if dst.String() != cmplLorem || res.Chunks != 1 || res.Partial {
		t.Errorf("client got %q, result %+v", dst.String(), res)
	}
}

func TestRelayStopsAtWhatIsNotAnOpenAIStream(t *testing.T) {
	for _, tc := range []struct{ name, garbage string }{
		{"an HTML page", "<html><body>502 Bad Gateway</body></html>\n\n"},
		{"data that is not JSON", "data: hello\n\n"},
		{"truncated JSON", `data: {"choices":[{"text":"x"` + "\n\n"},
		{"an unknown field", "foo: bar\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst bytes.Buffer
			res, err := Relay(&dst, strings.NewReader(cmplLorem+tc.garbage+cmplIpsum+done), RelayOptions{Now: clock()})
			if !errors.Is(err, ErrNotAStream) {
				t.Fatalf("Relay error = %v, want ErrNotAStream", err)
			}
			var se *SourceError
			if !errors.As(err, &se) {
				t.Errorf("error %T, want a *SourceError", err)
			}
			if dst.String() != cmplLorem || res.Chunks != 1 || res.Done {
				t.Errorf("client got %q, result %+v; want the event before the garbage only", dst.String(), res)
			}
		})
	}
	// Comments and the event, id and retry fields are part of a stream.
	var dst bytes.Buffer
	fields := ": ping\n\nevent: message\nid: 7\nretry: 1000\n\n"
	if _, err := Relay(&dst, strings.NewReader(fields+cmplLorem+done), RelayOptions{Now: clock()}); err != nil || dst.String() != fields+cmplLorem+done {
		t.Errorf("Relay = %v; client got %q", err, dst.String())
	}
}

func TestRelayLongEvent(t *testing.T) {
	// An event over maxEventBytes is passed through unread, and the next one is read again.
	long := "data: {\"choices\":[{\"index\":0,\"text\":\"" + strings.Repeat("x", maxEventBytes) + "\"}]}\n: more\n\n"
	var dst recorder
	src := long + cmplLorem + done
	res, err := Relay(&dst, strings.NewReader(src), RelayOptions{Flush: dst.flush, HideUsage: true, Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	if dst.String() != src {
		t.Errorf("client got %d bytes, want the %d sent", dst.Len(), len(src))
	}
	if res.Chunks != 1 || res.Answer != " lorem" || !res.Done {
		t.Errorf("result %+v, want the event after the long one read", res)
	}
}

func TestRelayFlushesABurstOnce(t *testing.T) {
	// Events that arrive together go out with one flush; a long event arriving in 4 KB pieces
	// is flushed before each read that waits for the next piece.
	var dst recorder
	burst := strings.Join([]string{chatRole, chatLorem, chatIpsum, chatStop, chatUsage, done}, "")
	long := "data: {\"choices\":[{\"index\":0,\"text\":\"" + strings.Repeat("x", maxEventBytes) + "\"}]}\n\n"
	src := &pacedSource{t: t, pieces: []string{burst, long, burst}, dst: &dst}
	if _, err := Relay(&dst, src, RelayOptions{Flush: dst.flush, Now: clock()}); err != nil {
		t.Fatal(err)
	}
	if dst.String() != burst+long+burst {
		t.Fatalf("client got %d bytes, want the %d sent", dst.Len(), len(burst+long+burst))
	}
	// The first burst: 6 writes, 1 flush. The long event: read in 4 KB pieces (the reader's
	// buffer), written once it outgrows maxEventBytes and then piece by piece, a flush before each
	// read. The second burst: 1 flush.
	if dst.unflushed != 0 || dst.flushes >= dst.writes || dst.flushes < 3 {
		t.Errorf("%d writes, %d flushes, %d unflushed at the end", dst.writes, dst.flushes, dst.unflushed)
	}
}

// chanWriter sends each write to a channel.
type chanWriter chan string

func (w chanWriter) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

func TestRelayHoldsNothingBack(t *testing.T) {
	pr, pw := io.Pipe()
	dst := make(chanWriter, 10)
	events := []string{chatRole, chatLorem, chatIpsum, chatStop, chatUsage, done}
	failed := make(chan string, 1)
	go func() {
		defer pw.Close()
		for _, ev := range events {
			// Send the event in two pieces with a pause, as a network would.
			half := len(ev) / 2
			if _, err := pw.Write([]byte(ev[:half])); err != nil {
				failed <- err.Error()
				return
			}
			time.Sleep(time.Millisecond)
			if _, err := pw.Write([]byte(ev[half:])); err != nil {
				failed <- err.Error()
				return
			}
			if ev == chatUsage {
				continue // hidden: nothing reaches the client
			}
			select {
			case got := <-dst:
				if got != ev {
					failed <- "client got " + got + ", want " + ev
					return
				}
			case <-time.After(5 * time.Second):
				failed <- "event not relayed before the next was sent: " + ev
				return
			}
		}
		failed <- ""
	}()
	res, err := Relay(dst, pr, RelayOptions{HideUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	if msg := <-failed; msg != "" {
		t.Fatal(msg)
	}
	if res.Usage == nil || res.Usage.CompletionTokens != 3 || res.Chunks != 2 {
		t.Errorf("result %+v", res)
	}
}

func TestRemoveMember(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1,"usage":{"x":[1,2]},"b":2}`, `{"a":1,"b":2}`},
		{`{"usage":{},"a":1}`, `{"a":1}`},
		{`{"a":1,"usage":2}`, `{"a":1}`},
		{`{"usage":2}`, `{}`},
		{`{ "a" : 1 , "usage" : 2 , "b" : "u\"sage" }`, `{ "a" : 1 , "b" : "u\"sage" }`},
		{`{ "usage" : 2 ,  "a" : 1 }`, `{ "a" : 1 }`},
		{`{"usage":1,"usage":2,"a":3}`, `{"a":3}`},
		{`{"a":{"usage":1}}`, `{"a":{"usage":1}}`}, // only top-level members
		{`{"a":1}`, `{"a":1}`},
		{`[1]`, `[1]`},
		{`{"a":`, `{"a":`},
	}
	for _, tt := range tests {
		if got := string(removeMember([]byte(tt.in), "usage")); got != tt.want {
			t.Errorf("removeMember(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestAppendCapped(t *testing.T) {
	var b strings.Builder
	appendCapped(&b, strings.Repeat("a", MaxAnswerBytes-2))
	appendCapped(&b, "é!") // 'é' is 2 bytes: fits exactly; '!' does not
	appendCapped(&b, "more")
	if b.Len() != MaxAnswerBytes || !strings.HasSuffix(b.String(), "aé") {
		t.Errorf("len %d, suffix %q", b.Len(), b.String()[b.Len()-4:])
	}
	b.Reset()
	appendCapped(&b, strings.Repeat("a", MaxAnswerBytes-1))
	appendCapped(&b, "日本") // 3 bytes do not fit in 1: nothing of the rune is kept
	if b.Len() != MaxAnswerBytes-1 {
		t.Errorf("len %d, want %d (no split rune)", b.Len(), MaxAnswerBytes-1)
	}
}

// timedSource is an engine's stream on the test's clock: piece i arrives at t0 + 5·(i+1) ms. A
// Read returns every piece that has arrived (waiting, on the clock, for the next if none has).
type timedSource struct {
	pieces []string
	next   int
	now    *time.Time
}

func (s *timedSource) Read(p []byte) (int, error) {
	if s.next == len(s.pieces) {
		return 0, io.EOF
	}
	arrival := func(i int) time.Time { return t0.Add(time.Duration(5*(i+1)) * time.Millisecond) }
	if at := arrival(s.next); s.now.Before(at) {
		*s.now = at
	}
	n := 0
	for s.next < len(s.pieces) && !s.now.Before(arrival(s.next)) && n+len(s.pieces[s.next]) <= len(p) {
		n += copy(p[n:], s.pieces[s.next])
		s.next++
	}
	return n, nil
}

// With FlushEvery, the first content chunk goes out at once and the chunks after it wait at most
// FlushEvery after the previous flush, so several leave in one flush; the end is never held.
func TestRelayFlushEvery(t *testing.T) {
	now := t0
	var sleeps []time.Duration
	var dst recorder
	var flushedAt []time.Time
	events := []string{chatRole, chatLorem, chatIpsum, chatDolor, chatLorem, chatIpsum, chatDolor, chatStop, chatUsage, done}
	src := &timedSource{pieces: events, now: &now}
	res, err := Relay(&dst, src, RelayOptions{HideUsage: false, Now: func() time.Time { return now },
		Flush:      func() { dst.flush(); flushedAt = append(flushedAt, now) },
		FlushEvery: 20 * time.Millisecond,
		Sleep:      func(d time.Duration) { sleeps = append(sleeps, d); now = now.Add(d) }})
	if err != nil || dst.String() != strings.Join(events, "") || res.Chunks != 6 || !res.Done {
		t.Fatalf("Relay = %+v, %v; client got %q", res, err, dst.String())
	}
	// The role chunk and the first content chunk each flushed as they came, before any wait.
	if len(flushedAt) < 2 || !flushedAt[1].Equal(t0.Add(10*time.Millisecond)) || !res.FirstContent.Equal(flushedAt[1]) {
		t.Errorf("flushes at %v, first content at %v: want the first content flushed at +10ms", flushedAt, res.FirstContent)
	}
	if len(flushedAt) >= len(events) || len(sleeps) == 0 {
		t.Errorf("%d flushes for %d events, sleeps %v: want fewer flushes than events", len(flushedAt), len(events), sleeps)
	}
	for i := 2; i < len(flushedAt); i++ {
		if gap := flushedAt[i].Sub(flushedAt[i-1]); gap > 20*time.Millisecond+5*time.Millisecond {
			t.Errorf("flush %d came %v after the previous one", i, gap)
		}
	}
	for _, d := range sleeps {
		if d <= 0 || d > 20*time.Millisecond {
			t.Errorf("slept %v, want (0, 20ms]", d)
		}
	}
}
