package soak

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/foresight-router/foresight/bench/openloop"
)

// maxAnswerBytes bounds a whole answer and one event of a stream.
const maxAnswerBytes = 1 << 20

// answer is what the soak reads of a completion, a chat completion or one of their stream
// chunks: an error, the text, the finish reason, the usage.
type answer struct {
	Error *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
	Choices []struct {
		Text  string `json:"text"`
		Delta *struct {
			Content string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// text returns the text the answer's choices carry, whichever the API.
func (a *answer) text() string {
	var b strings.Builder
	for _, c := range a.Choices {
		b.WriteString(c.Text)
		if c.Delta != nil {
			b.WriteString(c.Delta.Content)
		}
		if c.Message != nil {
			b.WriteString(c.Message.Content)
		}
	}
	return b.String()
}

// finish returns the answer's first finish reason, "" for none.
func (a *answer) finish() string {
	for _, c := range a.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			return *c.FinishReason
		}
	}
	return ""
}

// tally is what the whole of an answer added up to.
type tally struct {
	tokens int    // words of text: the emulator writes one per token
	finish string // the finish reason
	usage  *int   // usage.completion_tokens, nil when no usage came
}

// add counts a in.
func (t *tally) add(a *answer) {
	t.tokens += len(strings.Fields(a.text()))
	if f := a.finish(); f != "" && t.finish == "" {
		t.finish = f
	}
	if a.Usage != nil {
		n := a.Usage.CompletionTokens
		t.usage = &n
	}
}

// problem says what is wrong with an answer to c that added up to t: "" when it is complete —
// the tokens c asked for, a finish reason, and its usage when c asked for it (a whole answer
// always carries it).
func (t *tally) problem(c call) string {
	switch {
	case t.tokens != c.maxTokens:
		return fmt.Sprintf("%d tokens, asked for %d", t.tokens, c.maxTokens)
	case t.finish == "":
		return "no finish_reason"
	case (c.usage || !c.stream) && t.usage == nil:
		return "no usage"
	case t.usage != nil && *t.usage != c.maxTokens:
		return fmt.Sprintf("usage.completion_tokens %d, asked for %d", *t.usage, c.maxTokens)
	}
	return ""
}

// checkWhole reads a whole (not streamed) answer to c and says what is wrong with it.
func checkWhole(r io.Reader, c call) string {
	body, err := io.ReadAll(io.LimitReader(r, maxAnswerBytes))
	if err != nil {
		return "reading the answer: " + openloop.Clip(err.Error(), 200)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return "an answer that is not JSON: " + openloop.Clip(string(body), 200)
	}
	if a.Error != nil {
		return "an error answered with 200: " + openloop.Clip(a.Error.Message, 200)
	}
	var t tally
	t.add(&a)
	return t.problem(c)
}

// streamEnd is how a stream ended, as checkStream read it.
type streamEnd struct {
	ttft time.Duration // from began to its first token
	// cut is the error event's code (its message when it has none) of a stream the router ended
	// with an error event: the events so far, then one error event, then the end of the body.
	cut string
	// silent is a stream that ended without data: [DONE] and without an error event: truncated
	// with nothing to tell the client.
	silent bool
	// problem is what is wrong with the stream: "" when it ended with data: [DONE], nothing after
	// it, and adds up to a complete answer (tally.problem), or when it is cut.
	problem string
}

// checkStream reads a streamed answer to c up to its end and says how it ended.
func checkStream(r io.Reader, c call, began time.Time) streamEnd {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), maxAnswerBytes)
	var (
		e    streamEnd
		t    tally
		done bool
	)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue // blank separators, comments, event: and id: fields
		}
		data = bytes.TrimSpace(data)
		switch {
		case done:
			e.problem = "an event after data: [DONE]: " + openloop.Clip(string(data), 200)
			return e
		case e.cut != "":
			e.problem = "an event after the error event: " + openloop.Clip(string(data), 200)
			return e
		case string(data) == "[DONE]":
			done = true
			continue
		}
		var a answer
		if err := json.Unmarshal(data, &a); err != nil {
			e.problem = "an event that is not JSON: " + openloop.Clip(string(data), 200)
			return e
		}
		if a.Error != nil {
			e.cut = cmp.Or(a.Error.Code, openloop.Clip(a.Error.Message, 200))
			continue
		}
		if e.ttft == 0 && a.text() != "" {
			e.ttft = time.Since(began)
		}
		t.add(&a)
	}
	switch {
	case sc.Err() != nil:
		e.problem = "the stream broke: " + openloop.Clip(sc.Err().Error(), 200)
	case e.cut != "":
	case !done:
		e.silent, e.problem = true, "the stream ended without data: [DONE] and without an error event"
	default:
		e.problem = t.problem(c)
	}
	return e
}
