package openai

import (
	"encoding/json"
	"strings"
)

// The answers of OpenAI's Responses API: a stream's events and a whole response.

// The event types of a responses stream Relay acts on.
const (
	outputTextDelta = "response.output_text.delta" // a piece of the answer's text
	deltaSuffix     = ".delta"                     // any piece of generated output (text, reasoning, tool-call arguments …)
)

// terminalEvents end a responses stream: the response is complete, cut short (by
// max_output_tokens, say) or failed, and carries its usage.
var terminalEvents = map[string]bool{"response.completed": true, "response.incomplete": true, "response.failed": true}

// responseEvent is what Relay reads from one event's data in a responses stream.
type responseEvent struct {
	typ      string          // "type"
	delta    json.RawMessage // "delta" as sent; nil when absent
	response json.RawMessage // "response" as sent (a terminal event's response, usage included)
}

// responseEventJSON is the part of an event decodeResponseEvent reads.
type responseEventJSON struct {
	Type     *string         `json:"type"`
	Delta    json.RawMessage `json:"delta"`
	Response json.RawMessage `json:"response"`
}

// readResponseEvent reads data as an event of a responses stream; ok is false when it is not
// one (not a JSON object, or a "type" that is not a string). The usual event is read in one pass
// (scanResponseEvent); anything that reader is unsure of goes to encoding/json, the reference.
func readResponseEvent(data []byte) (e responseEvent, ok bool) {
	if e, ok = scanResponseEvent(data); ok {
		return e, true
	}
	return decodeResponseEvent(data)
}

// decodeResponseEvent is readResponseEvent by encoding/json.
func decodeResponseEvent(data []byte) (responseEvent, bool) {
	var j *responseEventJSON
	if json.Unmarshal(data, &j) != nil || j == nil {
		return responseEvent{}, false
	}
	e := responseEvent{delta: j.Delta, response: j.Response}
	if j.Type != nil {
		e.typ = *j.Type
	}
	return e, true
}

// responseEventFields are the members of an event scanResponseEvent reads, in the order its
// read function numbers them.
var responseEventFields = [...]string{"type", "delta", "response"}

// scanResponseEvent reads the common event in one pass; ok is false whenever encoding/json might
// read it differently (see scanChunk).
func scanResponseEvent(data []byte) (e responseEvent, ok bool) {
	s := scanner{b: data}
	ok = s.fields(responseEventFields[:], func(field int) (ok bool) {
		switch field {
		case 0:
			e.typ, ok = s.optString()
		case 1:
			e.delta, ok = s.raw()
		default:
			e.response, ok = s.raw()
		}
		return ok
	})
	s.space()
	return e, ok && s.i == len(data)
}

// generated reports whether a delta carries output: anything but absent, null, "", [] or {}.
func generated(delta json.RawMessage) bool {
	return present(delta) && string(delta) != `""`
}

// inspectResponse is inspect for an event of a responses stream, data its data: a terminal
// event ends the stream (Done once written) with its response's usage, a delta event with
// output is content (its text the answer's when it is output text), anything else passes
// through. The type is the data's "type", or the event's "event" field when the data has none.
func (r *relay) inspectResponse(ev, data []byte) (out []byte, content bool, text string, err error) {
	if string(data) == "[DONE]" {
		r.sawDone = true
		return ev, false, "", nil
	}
	e, ok := readResponseEvent(data)
	if !ok {
		if !json.Valid(data) {
			return nil, false, "", notAStream(data)
		}
		return ev, false, "", nil // JSON, but not an event: pass it on
	}
	typ := e.typ
	if typ == "" {
		typ = eventName(ev)
	}
	switch {
	case terminalEvents[typ]:
		r.sawDone = true
		var resp struct {
			Usage json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(e.response, &resp) == nil {
			if u := decodeResponsesUsage(resp.Usage); u != nil {
				r.res.Usage = u
			}
		}
	case strings.HasSuffix(typ, deltaSuffix) && generated(e.delta):
		if typ == outputTextDelta {
			text, _ = decodeString(e.delta)
		}
		return ev, true, text, nil
	}
	return ev, false, "", nil
}

// eventName returns the value of ev's "event" field ("" when it has none).
func eventName(ev []byte) (name string) {
	lines(ev, func(line, _ []byte) {
		if v, ok := strings.CutPrefix(string(line), "event:"); ok {
			name = strings.TrimPrefix(v, " ")
		}
	})
	return name
}

// responsesUsageJSON is a response's usage as engines send it.
type responsesUsageJSON struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// decodeResponsesUsage returns a response's usage (input, output and cached input tokens) as a
// Usage, or nil when it is absent, null or not a usage object.
func decodeResponsesUsage(raw json.RawMessage) *Usage {
	if isNull(raw) {
		return nil
	}
	var u responsesUsageJSON
	if json.Unmarshal(raw, &u) != nil {
		return nil
	}
	out := &Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens}
	if u.InputTokensDetails != nil {
		out.CachedTokens = u.InputTokensDetails.CachedTokens
	}
	return out
}

// wholeResponsesJSON is the part of a non-streamed response ReadWhole reads: its output items
// (each decoded on its own, so one of an unexpected shape costs only its own text) and usage.
type wholeResponsesJSON struct {
	Output []json.RawMessage `json:"output"`
	Usage  json.RawMessage   `json:"usage"`
}

// outputMessageJSON is the part of an output item that carries answer text.
type outputMessageJSON struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// readWholeResponses returns the output text of a response's message items, concatenated in
// order, and its usage.
func readWholeResponses(body []byte) (*strings.Builder, *Usage, error) {
	var resp wholeResponsesJSON
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	for _, item := range resp.Output {
		var m outputMessageJSON
		if json.Unmarshal(item, &m) != nil || m.Type != "message" {
			continue
		}
		for _, c := range m.Content {
			if c.Type == "output_text" {
				appendCapped(&b, c.Text)
			}
		}
	}
	return &b, decodeResponsesUsage(resp.Usage), nil
}
