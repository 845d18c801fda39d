package openai

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// Fuzz targets for the request parser, the stream relay and the prefix-block hashes. The one-pass
// JSON readers have their own targets (FuzzReadChunk, FuzzUnescape, FuzzObjectMembers,
// FuzzArrayElements); these check the public functions against what their doc comments promise,
// with encoding/json as the reference reading.

// parseSeeds are request bodies of every shape Parse meets: the usual ones, each field's edge
// cases and bodies it must refuse.
var parseSeeds = []struct {
	chat bool
	body string
}{
	{false, `{"model":"m","prompt":"Hello","max_tokens":7}`},
	{false, `{"model":"m","prompt":"x","stream":false,"Stream":true,"User":"u"}`}, // keys in another case
	{false, `{"model":"m","prompt":["Hello"]}`},
	{false, `{"model":"m","prompt":""}`},
	{false, `{"model":"m","prompt":"x","max_tokens":5,"max_completion_tokens":9}`},
	{false, `{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true},"user":"u1"}`},
	{false, `{"model":"m","prompt":"x","stream":null,"stream_options":null,"max_tokens":null,"user":null}`},
	{false, `{"model":"m","prompt":"x","max_tokens":12.0}`},
	{false, `{"model":"m","prompt":"x","max_tokens":1e2,"stream":true}`},
	{false, `{"model":"llama","prompt":"a\nb \"c\" \u00e9 \ud83d\ude00","stream":true,"temperature":0.5}`},
	{false, ` {"prompt":"x","model":"m","stream":true,"stream_options":null} `},
	{false, `{"model":"m","prompt":[1,2,3]}`},
	{false, `{"model":"m","prompt":["a","b"]}`},
	{false, `{"model":"m","prompt":"x","max_tokens":-1}`},
	{false, `{"model":"m","prompt":"x","max_tokens":1.5}`},
	{false, `{"model":"","prompt":"x"}`},
	{false, `{"model":"m","prompt":"x","stream_options":{"include_usage":true}}`},
	{false, `{"m\u006fdel":"m","prompt":"x","stream":true}`},
	{false, "{\"model\":\"m\xff\",\"prompt\":\"\xfe\",\"stream\":true,\"stream_options\":{}}"},
	{false, `[]`},
	{false, `null`},
	{false, ``},
	{false, `{"model":"m","prompt":"x"`},
	{true, `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`},
	{true, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]}]}`},
	{true, `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"b","tool_call_id":"1"}]}`},
	{true, `{"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":100,"max_completion_tokens":20}`},
	{true, `{"model":"m","messages":[{"role":"developer","content":"a"}],"stream":true,"stream_options":{"continuous_usage_stats":false}}`},
	{true, `{"model":"m","messages":[{"role":"user","content":"a"}],"stream":true}`},
	{true, `{"model":"m","messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{"include_usage":false,"x":[1, 2]}}`},
	{true, `{"model":"m","messages":[]}`},
	{true, `{"model":"m","messages":[{"role":"robot","content":"a"}]}`},
	{true, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`},
	{true, `{"model":"m","messages":[null]}`},
	{true, `{"model":"m","messages":[1]}`},
	{true, `{"model":"m","messages":{"role":"user"}}`},
}

// FuzzParse checks Parse against encoding/json's reading of the body. On error: a non-nil *Error
// with status 400 and a message, and the body untouched. On success: every field is what
// encoding/json reads from the body (the prompt rendered as Request.Prompt documents), InputTokens
// is EstimateTokens(Prompt) >= 1, and UpstreamBody is the body itself unless HiddenUsage, else
// valid JSON with the same members and values but stream_options.include_usage true, which
// Parse reads back as the same request. SetModel changes the model upstream and nothing else
// (checkSetModel).
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s.chat, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, chat bool, body []byte) {
		kind := Completions
		if chat {
			kind = Chat
		}
		orig := bytes.Clone(body)
		r, err := Parse(kind, body)
		if !bytes.Equal(body, orig) {
			t.Fatalf("Parse modified the body: %q became %q", orig, body)
		}
		if err != nil {
			e, ok := err.(*Error)
			switch {
			case !ok || e == nil:
				t.Fatalf("Parse(%v, %q) error %T %v, want a non-nil *Error", kind, body, err, err)
			case e.Status != 400 || e.Type != TypeInvalidRequest || e.Message == "":
				t.Fatalf("Parse(%v, %q) = %+v, want a 400 invalid_request_error with a message", kind, body, *e)
			case r != nil:
				t.Fatalf("Parse(%v, %q) returned a request with its error", kind, body)
			}
			return
		}
		checkParsed(t, kind, body, r)
		checkSetModel(t, kind, body, r)

		up, uerr := r.UpstreamBody()
		if uerr != nil {
			t.Fatalf("UpstreamBody of %q: %v", body, uerr)
		}
		if !bytes.Equal(body, orig) {
			t.Fatalf("UpstreamBody modified the body: %q became %q", orig, body)
		}
		if !json.Valid(up) {
			t.Fatalf("UpstreamBody of %q is not JSON: %q", body, up)
		}
		if !r.HiddenUsage() {
			if len(up) != len(body) || &up[0] != &body[0] {
				t.Fatalf("UpstreamBody of %q without hidden usage is %q, want the body itself", body, up)
			}
			return
		}
		checkUpstreamMembers(t, body, up)
		r2, err := Parse(kind, up)
		if err != nil {
			t.Fatalf("UpstreamBody %q of %q does not parse: %v", up, body, err)
		}
		if r2.Model != r.Model || r2.Stream != r.Stream || r2.MaxTokens != r.MaxTokens || r2.User != r.User ||
			r2.Prompt != r.Prompt || !r2.IncludeUsage || r2.HiddenUsage() {
			t.Fatalf("UpstreamBody %q of %q parses as %+v, want %+v with include_usage", up, body, *r2, *r)
		}
	})
}

// checkParsed checks r, parsed from body, against encoding/json's reading of body.
func checkParsed(t *testing.T, kind Kind, body []byte, r *Request) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		t.Fatalf("Parse accepted %q, which encoding/json reads as %v, %v", body, m, err)
	}
	str := func(raw json.RawMessage) string {
		var s string
		if !isNull(raw) && json.Unmarshal(raw, &s) != nil {
			t.Fatalf("Parse accepted %q whose %s is not a string", body, raw)
		}
		return s
	}
	boolean := func(raw json.RawMessage) bool {
		var b bool
		if !isNull(raw) && json.Unmarshal(raw, &b) != nil {
			t.Fatalf("Parse accepted %q whose %s is not a boolean", body, raw)
		}
		return b
	}
	if r.Kind != kind || r.Model == "" || r.Model != str(m["model"]) || r.User != str(m["user"]) ||
		r.Stream != boolean(m["stream"]) {
		t.Fatalf("Parse(%v, %q) = %+v: kind, model, user or stream differs from the body's", kind, body, *r)
	}
	// An engine on encoding/json matches keys regardless of case (the last match wins): it must
	// read what the router read.
	var folded struct {
		Model, User *string
		Stream      *bool
	}
	if err := json.Unmarshal(body, &folded); err != nil || *folded.Model != r.Model ||
		(folded.User != nil && *folded.User != r.User) || (folded.Stream != nil && *folded.Stream != r.Stream) {
		t.Fatalf("Parse(%v, %q) = %+v; encoding/json, matching keys in any case, reads %+v (%v)", kind, body, *r, folded, err)
	}
	var opts map[string]json.RawMessage
	if !isNull(m["stream_options"]) && (json.Unmarshal(m["stream_options"], &opts) != nil || opts == nil || !r.Stream) {
		t.Fatalf("Parse(%v, %q) accepted stream_options that are not an object on a stream", kind, body)
	}
	if r.IncludeUsage != boolean(opts["include_usage"]) {
		t.Fatalf("Parse(%v, %q): IncludeUsage %v", kind, body, r.IncludeUsage)
	}
	if r.HiddenUsage() != (r.Stream && !r.IncludeUsage) {
		t.Fatalf("HiddenUsage %v for stream %v, include_usage %v", r.HiddenUsage(), r.Stream, r.IncludeUsage)
	}
	limit := m["max_tokens"]
	if kind == Chat && !isNull(m["max_completion_tokens"]) {
		limit = m["max_completion_tokens"]
	}
	if want, ok := wholeNumber(limit); !ok || r.MaxTokens != want || r.MaxTokens < 0 {
		t.Fatalf("Parse(%v, %q): MaxTokens %d for %s", kind, body, r.MaxTokens, limit)
	}
	if want, ok := renderPrompt(kind, m); ok && r.Prompt != want {
		t.Fatalf("Parse(%v, %q): Prompt %q, want %q", kind, body, r.Prompt, want)
	}
	if kind == Chat && !strings.HasSuffix(r.Prompt, GenerationPrompt) {
		t.Fatalf("Parse(%v, %q): chat Prompt %q does not end with the generation prompt", kind, body, r.Prompt)
	}
	if !utf8.ValidString(r.Prompt) {
		t.Fatalf("Parse(%v, %q): Prompt %q is not UTF-8, unlike any string encoding/json decodes", kind, body, r.Prompt)
	}
	if n := r.InputTokens(); n < 1 || n != EstimateTokens(r.Prompt) {
		t.Fatalf("InputTokens %d for prompt %q", n, r.Prompt)
	}
}

// wholeNumber reads a count as a JSON number holding a whole number (absent or null: 0).
func wholeNumber(raw json.RawMessage) (int64, bool) {
	if isNull(raw) {
		return 0, true
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// renderPrompt renders the prompt of a body that Parse accepted, as Request.Prompt documents it,
// from encoding/json's reading; ok is false for a chat whose contents are not all strings or
// null (text parts are rendered by Parse alone).
func renderPrompt(kind Kind, m map[string]json.RawMessage) (string, bool) {
	if kind == Completions {
		var s string
		if json.Unmarshal(m["prompt"], &s) == nil {
			return s, true
		}
		var one []string
		if json.Unmarshal(m["prompt"], &one) != nil || len(one) != 1 {
			return "\x00not a prompt Parse may accept", true
		}
		return one[0], true
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(m["messages"], &msgs) != nil {
		return "\x00not messages Parse may accept", true
	}
	var b strings.Builder
	for _, msg := range msgs {
		var role, content string
		if json.Unmarshal(msg["role"], &role) != nil {
			return "\x00not a role Parse may accept", true
		}
		if c := msg["content"]; !isNull(c) && json.Unmarshal(c, &content) != nil {
			return "", false
		}
		b.WriteString(Turn(role, content))
	}
	return b.String() + GenerationPrompt, true
}

// checkUpstreamMembers checks that up has body's members with the same values (compacted), and
// stream_options with include_usage true and the client's other options.
func checkUpstreamMembers(t *testing.T, body, up []byte) {
	t.Helper()
	var in, out map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(up, &out); err != nil {
		t.Fatalf("UpstreamBody %q: %v", up, err)
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatalf("compacting %q: %v", raw, err)
		}
		return b.String()
	}
	for k, v := range in {
		if k == "stream_options" {
			continue
		}
		if w, ok := out[k]; !ok || compact(w) != compact(v) {
			t.Fatalf("UpstreamBody %q of %q: member %q is %s, want %s", up, body, k, w, v)
		}
	}
	var inOpts, outOpts map[string]json.RawMessage
	if !isNull(in["stream_options"]) {
		_ = json.Unmarshal(in["stream_options"], &inOpts)
	}
	if json.Unmarshal(out["stream_options"], &outOpts) != nil || string(outOpts["include_usage"]) != "true" {
		t.Fatalf("UpstreamBody %q of %q: stream_options %s, want include_usage true", up, body, out["stream_options"])
	}
	for k, v := range inOpts {
		if w, ok := outOpts[k]; k != "include_usage" && (!ok || compact(w) != compact(v)) {
			t.Fatalf("UpstreamBody %q of %q: stream_options.%s is %s, want %s", up, body, k, w, v)
		}
	}
	_, hadOpts := in["stream_options"]
	_, hadUsage := inOpts["include_usage"]
	if len(out) != len(in)+btoi(!hadOpts) || len(outOpts) != len(inOpts)+btoi(!hadUsage) {
		t.Fatalf("UpstreamBody %q of %q has members the body has not", up, body)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// relaySeeds are streams as engines send them, and the shapes the relay must pass through.
var relaySeeds = []string{
	chatRole + chatLorem + chatIpsum + chatDolor + chatStop + chatUsage + done,
	cmplLorem + cmplIpsum + cmplStop + cmplUsage + done,
	": ping\n\nevent: message\r\nid: 1\r\n" + strings.ReplaceAll(chatLorem, "\n", "\r\n") +
		"data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\" ipsum\"}}]}\n\n: keep-alive\r\n\r\n\nretry: 1000\n\ndata: [DONE]\r\n\r\n",
	"data:{\"choices\":[{\"index\":0,\"text\":\"x\"}],\"usage\":{\"completion_tokens\":1}}\n\n",
	"data: {\"choices\":[{\"index\":0,\"text\":\"a\"}],\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}",
	"data: {\"choices\":[{\"index\":1,\"text\":\"b\"},{\"index\":0,\"delta\":{\"reasoning_content\":\"r\",\"content\":\"c\"}}],\"usage\":{}}\r\n\r\n",
	"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n",
	"data: not json\n\ndata: [DONE]\n\n",
	"data\ndata\ndata: {\"choices\":[{}],\n\n",
	"\n\n\r\n",
	"",
}

// FuzzRelay relays arbitrary bytes, handed out in pieces whose sizes the fuzzer picks (cuts),
// with and without hidden usage, and checks Relay against a model of the SSE stream built from its
// doc comment. When Relay returns nil: without HideUsage the client gets the stream byte for byte;
// with it every event is passed through as it came except the usage-only chunk (choices empty,
// usage non-null), which is dropped, and any other chunk with a non-null usage, which loses its
// top-level "usage" members and nothing else (other lines kept, data the same JSON members).
// Either way Done, Chunks, Answer and Usage are what the events carried and nothing written is
// left unflushed at the end. Whatever Relay returns, FirstContent is zero exactly when no chunk
// carried content and is not after Last, and OnFirst and OnTokens report what the result says.
// When reads happen is FuzzRelayFlushesBeforeReads' to check.
func FuzzRelay(f *testing.F) {
	for i, s := range relaySeeds {
		f.Add([]byte(s), []byte{byte(i * 37), 5, 200}, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte, hide bool) {
		if len(stream) > maxEventBytes/4 {
			return // the pass-through of overlong events is TestRelayLongEvent's
		}
		run := relayInPieces(stream, cuts, hide)
		res, err, dst := run.res, run.err, &run.dst
		if res.Chunks < 0 || res.FirstContent.IsZero() != (res.Chunks == 0) || res.Last.Before(res.FirstContent) ||
			(res.Chunks == 1 && !res.Last.Equal(res.FirstContent)) {
			t.Fatalf("stream %q: result %+v", stream, res)
		}
		if len(run.firsts) != min(res.Chunks, 1) || len(run.firsts) == 1 && !run.firsts[0].Equal(res.FirstContent) {
			t.Fatalf("stream %q: OnFirst called with %v, result %+v", stream, run.firsts, res)
		}
		if len(run.tokens) != res.Chunks || res.Chunks > 0 && !run.tokensAt[len(run.tokensAt)-1].Equal(res.Last) {
			t.Fatalf("stream %q: OnTokens called with %v at %v, result %+v", stream, run.tokens, run.tokensAt, res)
		}
		for i, n := range run.tokens {
			if n != int64(i+1) {
				t.Fatalf("stream %q: OnTokens counts %v", stream, run.tokens)
			}
		}
		if err != nil {
			return // what a failing stream leaves written is the relay tests' to check
		}
		if dst.unflushed != 0 {
			t.Fatalf("stream %q: Relay returned with %d writes unflushed", stream, dst.unflushed)
		}
		if !hide && !bytes.Equal(dst.Bytes(), stream) {
			t.Fatalf("stream %q relayed as %q", stream, dst.Bytes())
		}
		want := modelStream(stream)
		if res.Done != want.done || res.Chunks != want.chunks || res.Answer != want.answer ||
			(res.Usage == nil) != (want.usage == nil) || res.Usage != nil && *res.Usage != *want.usage {
			t.Fatalf("stream %q: result %+v, want done %v, %d chunks, answer %q, usage %+v",
				stream, res, want.done, want.chunks, want.answer, want.usage)
		}
		if hide {
			checkHiddenUsage(t, stream, dst.Bytes())
		}
	})
}

// FuzzRelayFlushesBeforeReads checks Relay's promise to flush whatever it wrote before every read
// of src, "never between a write and a read that could block", whatever the stream and however it
// is cut into reads.
func FuzzRelayFlushesBeforeReads(f *testing.F) {
	for i, s := range relaySeeds {
		f.Add([]byte(s), []byte{byte(i * 37), 5, 200}, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte, hide bool) {
		if len(stream) > maxEventBytes/4 {
			return
		}
		run := relayInPieces(stream, cuts, hide)
		if run.src.readUnflushed != "" {
			t.Fatalf("stream %q in reads of %v bytes: %s", stream, run.src.pieces, run.src.readUnflushed)
		}
	})
}

// relayRun is what one Relay call did.
type relayRun struct {
	res      StreamResult
	err      error
	dst      relayDst
	src      *piecesReader
	firsts   []time.Time // OnFirst's calls
	tokens   []int64     // OnTokens' calls
	tokensAt []time.Time
}

// relayInPieces relays stream read in pieces cut by cuts, with a clock that ticks 1 ms a call.
func relayInPieces(stream, cuts []byte, hide bool) *relayRun {
	run := &relayRun{}
	run.src = &piecesReader{data: stream, cuts: cuts, dst: &run.dst}
	tick := 0
	run.res, run.err = Relay(&run.dst, run.src, RelayOptions{
		Flush:     run.dst.flush,
		HideUsage: hide,
		Now: func() time.Time {
			tick++
			return t0.Add(time.Duration(tick) * time.Millisecond)
		},
		OnFirst: func(at time.Time) { run.firsts = append(run.firsts, at) },
		OnTokens: func(n int64, at time.Time) {
			run.tokens = append(run.tokens, n)
			run.tokensAt = append(run.tokensAt, at)
		},
	})
	return run
}

// relayDst records what Relay writes and how many writes are not flushed yet.
type relayDst struct {
	bytes.Buffer
	unflushed int
}

func (d *relayDst) Write(p []byte) (int, error) { d.unflushed++; return d.Buffer.Write(p) }
func (d *relayDst) flush()                      { d.unflushed = 0 }

// piecesReader hands out data in pieces whose sizes come from cuts (cycled; 1 to 64 bytes, or
// all at once when cuts is empty) and notes a read made while a write was not flushed.
type piecesReader struct {
	data, cuts    []byte
	pieces        []int
	dst           *relayDst
	readUnflushed string
}

func (r *piecesReader) Read(p []byte) (int, error) {
	if r.dst.unflushed > 0 && r.readUnflushed == "" {
		r.readUnflushed = "Relay read on after piece " + strconv.Itoa(len(r.pieces)) + " with " +
			strconv.Itoa(r.dst.unflushed) + " writes unflushed: " + strconv.Quote(r.dst.String())
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.cuts) > 0 {
		n = int(r.cuts[len(r.pieces)%len(r.cuts)])%64 + 1
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	r.pieces = append(r.pieces, n)
	return n, nil
}

// sseEvent is one event of a stream as Relay's doc defines them: lines ended by "\n" up to a blank
// line ("\n" or "\r\n"), or what is left at the end.
type sseEvent struct {
	raw      []byte
	data     []byte // the data lines' values joined by "\n"
	hasData  bool
	dataEOLs int      // how many data lines
	others   [][]byte // every other line with its terminator, in order
}

// splitEvents splits a stream into its events.
func splitEvents(stream []byte) []sseEvent {
	var evs []sseEvent
	var cur sseEvent
	for len(stream) > 0 {
		line := stream
		if i := bytes.IndexByte(stream, '\n'); i >= 0 {
			line = stream[:i+1]
		}
		stream = stream[len(line):]
		cur.raw = append(cur.raw, line...)
		value := bytes.TrimSuffix(line, []byte("\n"))
		if len(value) < len(line) {
			value = bytes.TrimSuffix(value, []byte("\r"))
		}
		if v, ok := bytes.CutPrefix(value, []byte("data:")); ok || string(value) == "data" {
			if !ok {
				v = nil // a bare "data" line has an empty value
			}
			if cur.hasData {
				cur.data = append(cur.data, '\n')
			}
			cur.data = append(cur.data, bytes.TrimPrefix(v, []byte(" "))...)
			cur.hasData = true
			cur.dataEOLs++
		} else {
			cur.others = append(cur.others, line)
		}
		if string(line) == "\n" || string(line) == "\r\n" {
			evs = append(evs, cur)
			cur = sseEvent{}
		}
	}
	if len(cur.raw) > 0 {
		evs = append(evs, cur)
	}
	return evs
}

// streamModel is what a stream carries, read event by event with encoding/json.
type streamModel struct {
	done   bool
	chunks int
	answer string
	usage  *Usage
}

func modelStream(stream []byte) streamModel {
	var m streamModel
	for _, ev := range splitEvents(stream) {
		if !ev.hasData {
			continue
		}
		if string(ev.data) == "[DONE]" {
			m.done = true
			continue
		}
		c, ok := decodeChunk(ev.data)
		if !ok {
			continue
		}
		if u := decodeUsage(c.usage); u != nil {
			m.usage = u
		}
		if c.content {
			m.chunks++
			m.answer += c.text0
		}
	}
	return m
}

// checkHiddenUsage checks the client's stream out against the upstream stream in, relayed with
// HideUsage.
func checkHiddenUsage(t *testing.T, in, out []byte) {
	t.Helper()
	rest := out
	for _, ev := range splitEvents(in) {
		var c chunkFacts
		ok := ev.hasData && string(ev.data) != "[DONE]"
		if ok {
			c, ok = decodeChunk(ev.data)
		}
		switch {
		case !ok || isNull(c.usage):
			if !bytes.HasPrefix(rest, ev.raw) {
				t.Fatalf("stream %q relayed with hidden usage as %q: event %q not passed through as it came", in, out, ev.raw)
			}
			rest = rest[len(ev.raw):]
		case c.choices == 0:
			// The usage-only chunk: dropped.
		default:
			got := splitEvents(rest)
			if len(got) == 0 {
				t.Fatalf("stream %q relayed with hidden usage as %q: event %q missing", in, out, ev.raw)
			}
			g := got[0]
			rest = rest[len(g.raw):]
			var want, have map[string]json.RawMessage
			if err := json.Unmarshal(ev.data, &want); err != nil {
				t.Fatalf("chunk %q: %v", ev.data, err)
			}
			delete(want, "usage")
			if err := json.Unmarshal(g.data, &have); err != nil || !g.hasData || have == nil ||
				!maps2Equal(want, have) || !slices.EqualFunc(ev.others, g.others, bytes.Equal) {
				t.Fatalf("stream %q relayed with hidden usage as %q: event %q became %q, want its members but usage", in, out, ev.raw, g.raw)
			}
			if _, kept := have["usage"]; kept {
				t.Fatalf("stream %q relayed with hidden usage as %q: event %q keeps a usage member: %q", in, out, ev.raw, g.raw)
			}
		}
	}
	if len(rest) > 0 {
		t.Fatalf("stream %q relayed with hidden usage as %q: %q left over", in, out, rest)
	}
}

func maps2Equal(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// FuzzPrefixBlocks checks PrefixBlocks against its doc comment: one hash per full block of
// BlockChars runes (an invalid byte is one rune), hash i the FNV-1a 64 of hash i-1 (little-endian,
// 0 before the first) then block i's bytes, mixed by splitmix64; appended to dst, which keeps its
// entries; and the same every time. HashBlocks(a).Hashes is PrefixBlocks(nil, a), and
// HashBlocks(a).Extend(nil, b) is PrefixBlocks(nil, a+b) past a's blocks when a is valid UTF-8
// (see the note below).
func FuzzPrefixBlocks(f *testing.F) {
	base := strings.Repeat("the quick brown fox ", 20)
	f.Add(base, " jumps over the lazy dog")
	f.Add(base[:BlockChars], base[BlockChars:3*BlockChars])
	f.Add(base[:BlockChars-1], "x")
	f.Add(strings.Repeat("日本語のテキスト", 20), "é😀")
	f.Add("<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n", "Hello! How can I help?\n<|user|>\nTell me a story.\n<|assistant|>\n")
	f.Add(strings.Repeat("\xff", BlockChars+3), strings.Repeat("a\xe6\x97", 30))
	f.Add("", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		text := a + b
		got := PrefixBlocks(nil, text)
		if want := refBlocks(text); !slices.Equal(got, want) {
			t.Fatalf("PrefixBlocks(%q) = %x, want %x", text, got, want)
		}
		if n := utf8.RuneCountInString(text) / BlockChars; len(got) != n {
			t.Fatalf("PrefixBlocks(%q) has %d hashes for %d full blocks", text, len(got), n)
		}
		if again := PrefixBlocks(nil, text); !slices.Equal(got, again) {
			t.Fatalf("PrefixBlocks(%q) gave %x, then %x", text, got, again)
		}
		dst := []uint64{7, 8}
		if app := PrefixBlocks(dst, text); !slices.Equal(app, append([]uint64{7, 8}, got...)) {
			t.Fatalf("PrefixBlocks([7 8], %q) = %x, want [7 8] followed by %x", text, app, got)
		}
		hb := HashBlocks(a)
		if want := PrefixBlocks(nil, a); !slices.Equal(hb.Hashes, want) {
			t.Fatalf("HashBlocks(%q).Hashes = %x, want %x", a, hb.Hashes, want)
		}
		ext := append(slices.Clone(hb.Hashes), hb.Extend(nil, b)...)
		// Extend promises the blocks of a+b. That holds when a's runes are runes of text too,
		// always so for valid UTF-8 a (every prompt and answer the router hashes is decoded JSON,
		// hence valid UTF-8). An a that ends inside a UTF-8 sequence which b completes, say
		// "…\xe6" + "\x97\xa5…", counts those bytes as more runes than text does, so its blocks
		// are not text's and the promise cannot hold there.
		if utf8.ValidString(a) && !slices.Equal(ext, got) {
			t.Fatalf("HashBlocks(%q) extended by %q = %x, want PrefixBlocks(nil, a+b) = %x", a, b, ext, got)
		}
	})
}

// refBlocks computes the prefix-block hashes from PrefixBlocks' doc comment with hash/fnv.
func refBlocks(text string) []uint64 {
	var starts []int // byte offset of each rune, as range yields them (an invalid byte is a rune)
	for i := range text {
		starts = append(starts, i)
	}
	starts = append(starts, len(text))
	var out []uint64
	var prev uint64
	for i := 0; (i+1)*BlockChars < len(starts); i++ {
		h := fnv.New64a()
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], prev)
		h.Write(le[:])
		h.Write([]byte(text[starts[i*BlockChars]:starts[(i+1)*BlockChars]]))
		prev = splitmix.Mix(h.Sum64())
		out = append(out, prev)
	}
	return out
}

// PrefixBlocks appends to dst the hashes HashBlocks gives text (the fuzz test's and the
// benchmark's view of the formula, appending as they check it).
func PrefixBlocks(dst []uint64, text string) []uint64 { return appendBlocks(dst, 0, text) }
