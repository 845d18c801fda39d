package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// StreamResult is what Relay saw.
type StreamResult struct {
	// FirstContent is when the first chunk carrying generated content (non-empty text or
	// delta.content, or a tool-call or reasoning delta) was written to the client; zero if none.
	// A chat stream's opening role-only delta is not content. In a responses stream content is
	// an event whose type ends in ".delta" (output text, reasoning, tool-call arguments …) with a
	// non-empty delta.
	FirstContent time.Time
	Last         time.Time // when the last content chunk was written
	// Usage is from the last chunk carrying usage (the final usage chunk), or a responses
	// stream's terminal event; nil if none.
	Usage *Usage
	// Answer is the generated text of choice 0, or a responses stream's output text (its
	// response.output_text.delta events), capped at MaxAnswerBytes.
	Answer string
	// Done is true when "data: [DONE]" or, in a responses stream, its terminal event
	// (response.completed, response.incomplete or response.failed) was written to the client.
	Done   bool
	Chunks int // content chunks
	// Partial is true when what was written ends inside an event: the stream broke while an
	// event longer than the relay holds (4 MiB) was being passed through, or ended with an
	// event without its blank line. What follows must first end that event.
	Partial bool
}

// SourceError is Relay's error when reading the upstream stream failed or it sent something that
// is not an event of an OpenAI stream (as opposed to writing to the client, whose error Relay
// returns as it is).
type SourceError struct{ Err error }

// Error describes the failed read.
func (e *SourceError) Error() string { return fmt.Sprintf("reading upstream stream: %v", e.Err) }

// ErrNotAStream is the Err of Relay's SourceError for an event that is neither a JSON chunk nor
// [DONE], comments and event, id and retry fields aside: the body is not an OpenAI stream.
var ErrNotAStream = errors.New("not an OpenAI stream")

// Unwrap returns the read error.
func (e *SourceError) Unwrap() error { return e.Err }

// maxEventBytes bounds how much of one event Relay holds to inspect it; the rest of a longer
// event is passed through unread, so memory stays bounded whatever the engine sends.
const maxEventBytes = 4 << 20

// RelayOptions are Relay's collaborators and settings; the zero value relays with no flushing,
// no callbacks and time.Now.
type RelayOptions struct {
	// Kind is the request's kind: Responses relays a responses stream (its events typed, its
	// usage in its terminal event); any other value a completions or chat stream of chunks.
	Kind Kind
	// Flush is http.Flusher's Flush (nil: nothing to flush).
	Flush func()
	// HideUsage drops the usage the client did not ask for (Request.HiddenUsage); a responses
	// stream's usage is always the client's, and HideUsage does not apply to it.
	HideUsage bool
	// Now gives the time (nil: time.Now); OnFirst, when non-nil, is called once with the time the
	// first content chunk was written; OnTokens, when non-nil, with the running count of content
	// chunks and the time after each one, the first included.
	Now      func() time.Time
	OnFirst  func(time.Time)
	OnTokens func(n int64, at time.Time)
	// FlushEvery, when positive, lets what follows the first content chunk wait until FlushEvery
	// after the previous flush before it is flushed, reading nothing meanwhile, so the chunks the
	// engine sent in between go out in one write and come in with one read. The first content
	// chunk and the end of the stream are never held. Sleep waits (nil: time.Sleep).
	FlushEvery time.Duration
	Sleep      func(time.Duration)
	// Rename renames the model in every event the relay writes (ModelRename.Apply on its data,
	// its other lines kept); the zero value renames nothing. An event longer than the relay holds
	// (4 MiB) is passed through as it came.
	Rename ModelRename
}

// Relay copies an SSE stream from src to dst event by event, holding at most one event. It
// flushes (o.Flush) whenever it has written something and has nothing more to read without
// waiting on src: before every read of src and before it returns, never between a write and a
// read that could block. A burst of events that arrived together goes out in one flush (one
// write system call) instead of one per event, and no event waits on the engine's next one
// (unless o.FlushEvery says it may). Events, comments (": ping"), multi-line data fields and "\n"
// or "\r\n" line endings pass through byte for byte.
//
// When o.HideUsage is true it drops the usage-only chunk (choices empty, usage present) and
// removes a non-null "usage" member the engine added to other chunks (vLLM's
// continuous_usage_stats is not requested, but Relay does not rely on it), so the client sees
// exactly what it would have without stream_options.include_usage. Usage is recorded either way.
//
// With o.Kind Responses the stream is a responses stream: events typed by their data's "type"
// (or their "event" field), content the ".delta" events with output, the answer the
// response.output_text.delta events' text, the end and the usage its terminal event
// (response.completed, response.incomplete or response.failed; "data: [DONE]" ends it too).
// Every event passes through as it came (o.Rename aside).
//
// Relay returns when src ends (nil at EOF), when it fails (a *SourceError: a read error, or an
// event that is not part of an OpenAI stream, wrapping ErrNotAStream; the event at fault, or the
// part of one the read error cut, is not written) or when a write to dst fails: the client went
// away, and Relay returns that error as it is so the caller can cancel the upstream request. At
// EOF a last event without its blank line is passed on.
func Relay(dst io.Writer, src io.Reader, o RelayOptions) (StreamResult, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = time.Sleep
	}
	r := relay{dst: dst, o: o, rename: newRenamer(o.Rename)}
	br := bufio.NewReaderSize(src, 4<<10) // longer lines arrive in pieces
	var (
		ev        []byte // the event so far, raw
		lineStart int    // where the current line starts in ev
		overflow  bool   // the event outgrew maxEventBytes: the rest of it is passed through
		atLine    bool   // when overflowing: the next fragment starts a line
	)
	for {
		if r.pending && !lineBuffered(br) {
			r.pace()
			r.flushDst() // the next read may wait on the engine
		}
		frag, rerr := br.ReadSlice('\n')
		if overflow {
			if _, err := dst.Write(frag); err != nil {
				return r.result(), err
			}
			// A line longer than one fragment is not blank, so a fragment is blank on its own.
			ended := len(frag) > 0 && frag[len(frag)-1] == '\n'
			r.pending = true
			if ended && atLine && isBlank(frag) {
				overflow = false
			}
			atLine = ended || (atLine && len(frag) == 0)
		} else {
			ev = append(ev, frag...)
			if len(ev) > 0 && ev[len(ev)-1] == '\n' {
				if isBlank(ev[lineStart:]) {
					if err := r.event(ev); err != nil {
						return r.result(), err
					}
					ev = ev[:0]
					if cap(ev) > 64<<10 {
						ev = nil // do not keep a rare big event's buffer for the rest of the stream
					}
				}
				lineStart = len(ev)
			}
			if len(ev) > maxEventBytes {
				if _, err := dst.Write(ev); err != nil {
					return r.result(), err
				}
				r.pending = true
				overflow, atLine = true, ev[len(ev)-1] == '\n'
				ev, lineStart = ev[:0], 0
			}
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		if rerr != nil {
			var unended bool                                // what was written ends inside an event
			if rerr == io.EOF && !overflow && len(ev) > 0 { // a last event without its blank line
				if err := r.event(ev); err != nil {
					return r.result(), err
				}
				unended = true
			}
			r.flushDst()
			r.res.Partial = overflow || unended
			if rerr == io.EOF {
				return r.result(), nil
			}
			return r.result(), &SourceError{Err: rerr}
		}
	}
}

// lineBuffered reports whether br's next ReadSlice('\n') returns without reading its source: it
// holds a whole line, or a full buffer.
func lineBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == br.Size() {
		return true
	}
	b, _ := br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// isBlank reports whether line (with its terminator) is empty: the end of an event.
func isBlank(line []byte) bool { return string(line) == "\n" || string(line) == "\r\n" }

// relay is Relay's state.
type relay struct {
	dst    io.Writer
	o      RelayOptions
	rename renamer

	res          StreamResult
	answer       strings.Builder
	pending      bool      // written since the last flush
	sawDone      bool      // "data: [DONE]" was read (Done once it is written)
	lastFlush    time.Time // when content was last flushed after the first content chunk's flush
	firstFlushed bool      // the first content chunk has been flushed
}

func (r *relay) result() StreamResult {
	res := r.res
	res.Answer = r.answer.String()
	return res
}

// flushDst flushes what was written since the last flush, if anything.
func (r *relay) flushDst() {
	if !r.pending {
		return
	}
	if r.o.Flush != nil {
		r.o.Flush()
	}
	r.pending = false
	if !r.res.FirstContent.IsZero() {
		r.firstFlushed = true
		if r.o.FlushEvery > 0 {
			r.lastFlush = r.o.Now()
		}
	}
}

// pace waits, under FlushEvery, until the pending content may be flushed: FlushEvery after the
// previous flush. Nothing waits before the first content chunk is out.
func (r *relay) pace() {
	if r.o.FlushEvery <= 0 || !r.pending || !r.firstFlushed {
		return
	}
	if wait := r.lastFlush.Add(r.o.FlushEvery).Sub(r.o.Now()); wait > 0 {
		r.o.Sleep(wait)
	}
}

// event inspects one raw event (its lines and the blank line ending it), writes it (or what is
// left of it) to the client and records what it carried.
func (r *relay) event(ev []byte) error {
	out, content, text, err := r.inspect(ev)
	if err != nil {
		r.flushDst()
		return err
	}
	if out == nil {
		return nil // the hidden usage chunk
	}
	if _, err := r.dst.Write(r.rename.event(out)); err != nil {
		return err
	}
	r.res.Done = r.res.Done || r.sawDone
	r.pending = true
	if !content {
		return nil
	}
	appendCapped(&r.answer, text)
	at := r.o.Now()
	r.res.Chunks++
	r.res.Last = at
	if r.res.FirstContent.IsZero() {
		r.res.FirstContent = at
		if r.o.OnFirst != nil {
			r.o.OnFirst(at)
		}
	}
	if r.o.OnTokens != nil {
		r.o.OnTokens(int64(r.res.Chunks), at)
	}
	return nil
}

// inspect records the usage and end marker ev carries, and returns the bytes to write (nil to
// drop the event), whether it carried generated content and choice 0's text; or a *SourceError
// when ev is not an event of an OpenAI stream.
func (r *relay) inspect(ev []byte) (out []byte, content bool, text0 string, err error) {
	data, ok := eventData(ev)
	if !ok {
		if !fieldsOnly(ev) {
			return nil, false, "", notAStream(ev)
		}
		return ev, false, "", nil // a comment, retry or other field-only event
	}
	if r.o.Kind == Responses {
		return r.inspectResponse(ev, data)
	}
	if string(data) == "[DONE]" {
		r.sawDone = true
		return ev, false, "", nil
	}
	c, ok := readChunk(data)
	if !ok {
		if !json.Valid(data) {
			return nil, false, "", notAStream(data)
		}
		return ev, false, "", nil // JSON but not a chunk (an engine's error event, say): pass it on
	}
	if isNull(c.usage) {
		return ev, c.content, c.text0, nil
	}
	if u := decodeUsage(c.usage); u != nil {
		r.res.Usage = u
	}
	if !r.o.HideUsage {
		return ev, c.content, c.text0, nil
	}
	if c.choices == 0 {
		return nil, false, "", nil
	}
	return replaceData(ev, removeMember(data, "usage")), c.content, c.text0, nil
}

// fieldsOnly reports whether every line of an event without data is a comment, a blank line or
// one of the fields an OpenAI stream may carry (event, id, retry).
func fieldsOnly(ev []byte) bool {
	ok := true
	lines(ev, func(line, _ []byte) {
		if len(line) == 0 || line[0] == ':' {
			return
		}
		name, _, _ := bytes.Cut(line, []byte(":"))
		switch string(name) {
		case "event", "id", "retry":
		default:
			ok = false
		}
	})
	return ok
}

// notAStream is the SourceError for an event that is not part of an OpenAI stream, quoting its
// start.
func notAStream(what []byte) error {
	const quote = 64
	if len(what) > quote {
		what = what[:quote]
	}
	return &SourceError{Err: fmt.Errorf("%w: %q", ErrNotAStream, what)}
}
