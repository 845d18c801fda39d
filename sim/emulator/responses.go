package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	prompt, err := responsesPrompt(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	n, err := outputLength([]string{"max_output_tokens"}, req.MaxOutputTokens)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	base := responseObject{Object: "response", CreatedAt: time.Now().Unix(), Model: s.model, Output: []outputMessage{}}
	if req.Stream {
		s.streamResponse(w, r, Tokenize(prompt), n, base)
		return
	}
	var text strings.Builder
	gen, err := s.generate(r.Context(), job{tokens: Tokenize(prompt), maxTokens: n}, nil, func(id uint64, k int) error {
		text.WriteString(fillerToken(id, k))
		return nil
	})
	if err != nil {
		s.fail(w, err)
		return
	}
	base.ID, base.Status, base.Usage = responseID(gen.id), "completed", gen.responseUsage()
	base.Output = []outputMessage{completedMessage(gen.id, text.String())}
	writeJSON(w, http.StatusOK, base)
}

func responseID(id uint64) string { return fmt.Sprintf("resp_%d", id) }
func messageID(id uint64) string  { return fmt.Sprintf("msg_%d", id) }

func completedMessage(id uint64, text string) outputMessage {
	return outputMessage{Type: "message", ID: messageID(id), Role: "assistant", Status: "completed", Content: []outputText{newOutputText(text)}}
}

// streamResponse streams a response as vLLM does: response.created and response.in_progress
// once the engine accepts the request; response.output_item.added and
// response.content_part.added with the first token, then one response.output_text.delta per
// token at the engine's time for it; after the last, the done events of the text, the part and
// the item, and response.completed with the whole response and its usage. No [DONE] follows.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, tokens []uint32, n int, resp responseObject) {
	ev := &eventStream{w: w}
	ev.flusher, _ = w.(http.Flusher)
	started := false
	var text strings.Builder
	gen, err := s.generate(r.Context(), job{tokens: tokens, maxTokens: n}, func(id uint64) error {
		started = true
		startSSE(w)
		resp.ID, resp.Status = responseID(id), "in_progress"
		if err := ev.send("response.created", map[string]any{"response": resp}); err != nil {
			return err
		}
		return ev.send("response.in_progress", map[string]any{"response": resp})
	}, func(id uint64, k int) error {
		if k == 1 {
			item := outputMessage{Type: "message", ID: messageID(id), Role: "assistant", Status: "in_progress", Content: []outputText{}}
			if err := ev.send("response.output_item.added", map[string]any{"output_index": 0, "item": item}); err != nil {
				return err
			}
			if err := ev.send("response.content_part.added", partEvent(id, "part", newOutputText(""))); err != nil {
				return err
			}
		}
		delta := fillerToken(id, k)
		text.WriteString(delta)
		return ev.send("response.output_text.delta", partEvent(id, "delta", delta, "logprobs", []any{}))
	})
	if err != nil {
		if !started {
			s.fail(w, err)
		}
		return // a client that went away gets nothing more; the engine aborts the request
	}
	msg := completedMessage(gen.id, text.String())
	resp.Status, resp.Output, resp.Usage = "completed", []outputMessage{msg}, gen.responseUsage()
	for _, e := range []struct {
		typ    string
		fields map[string]any
	}{
		{"response.output_text.done", partEvent(gen.id, "text", text.String(), "logprobs", []any{})},
		{"response.content_part.done", partEvent(gen.id, "part", msg.Content[0])},
		{"response.output_item.done", map[string]any{"output_index": 0, "item": msg}},
		{"response.completed", map[string]any{"response": resp}},
	} {
		if ev.send(e.typ, e.fields) != nil {
			return
		}
	}
}

// partEvent returns the fields of an event about content part 0 of output item 0, the message
// of request id, plus the key, value pairs kv.
func partEvent(id uint64, kv ...any) map[string]any {
	fields := map[string]any{"item_id": messageID(id), "output_index": 0, "content_index": 0}
	for i := 0; i+1 < len(kv); i += 2 {
		fields[kv[i].(string)] = kv[i+1]
	}
	return fields
}

// eventStream writes the Responses API's named Server-Sent Events, numbered from 0 in
// sequence_number, each flushed as it is written.
type eventStream struct {
	w       http.ResponseWriter
	flusher http.Flusher
	seq     int
}

// send writes "event: typ" and the fields with "type": typ and the next sequence number.
func (e *eventStream) send(typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
		return err
	}
	if e.flusher != nil {
		e.flusher.Flush()
	}
	return nil
}
