package openai

import (
	"encoding/json"
	"slices"
	"strings"
)

// chunkFacts is what Relay reads from one stream chunk (an event's data).
type chunkFacts struct {
	choices int             // members of "choices"
	content bool            // some choice carried generated content
	text0   string          // the text of choice 0 (index 0): its "text" then its "delta.content"
	usage   json.RawMessage // the "usage" member as sent; nil when absent
}

// streamChunk is the part of a stream chunk decodeChunk reads.
type streamChunk struct {
	Choices []struct {
		Index int     `json:"index"`
		Text  *string `json:"text"`
		Delta *struct {
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
			FunctionCall     json.RawMessage `json:"function_call"`
		} `json:"delta"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// readChunk reads data as a stream chunk; ok is false when it is not one (not JSON, or not of
// a chunk's shape: an engine's error event, say). The usual chunk is read by scanChunk in one
// pass without allocating; anything scanChunk is unsure of goes to encoding/json, whose reading
// is the reference (FuzzReadChunk checks that both agree).
func readChunk(data []byte) (f chunkFacts, ok bool) {
	if f, ok = scanChunk(data); ok {
		return f, true
	}
	return decodeChunk(data)
}

// decodeChunk is readChunk by encoding/json.
func decodeChunk(data []byte) (f chunkFacts, ok bool) {
	var c streamChunk
	if json.Unmarshal(data, &c) != nil {
		return chunkFacts{}, false
	}
	f.choices, f.usage = len(c.Choices), c.Usage
	for _, ch := range c.Choices {
		var text string
		if ch.Text != nil {
			text = *ch.Text
		}
		if d := ch.Delta; d != nil {
			if d.Content != nil {
				text += *d.Content
			}
			if nonEmpty(d.ReasoningContent) || nonEmpty(d.Reasoning) || present(d.ToolCalls) || present(d.FunctionCall) {
				f.content = true
			}
		}
		if text != "" {
			f.content = true
			if ch.Index == 0 {
				f.text0 += text
			}
		}
	}
	return f, true
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// present reports whether a field holds something other than null, [] or {}.
func present(raw json.RawMessage) bool {
	return !isNull(raw) && string(raw) != "[]" && string(raw) != "{}"
}

// scanChunk reads the common chunk in one pass: an object whose members are spelt as the
// fields of streamChunk, each of the type it expects, strings without escapes or with simple
// ones. ok is false whenever encoding/json might read data differently: any escape it does not
// decode itself, a key that differs from a field's name only in case, a repeated field, a
// choice or delta that is not an object, deep nesting, or JSON it does not accept.
func scanChunk(data []byte) (f chunkFacts, ok bool) {
	s := scanner{b: data}
	ok = s.fields(chunkFields[:], func(field int) bool {
		if field == 1 { // usage
			f.usage, ok = s.raw()
			return ok
		}
		return s.choices(&f)
	})
	s.space()
	return f, ok && s.i == len(data)
}

// The members of a chunk, a choice and a delta that scanChunk reads, in the order fields numbers them.
var (
	chunkFields  = [...]string{"choices", "usage"}
	choiceFields = [...]string{"index", "text", "delta"}
	deltaFields  = [...]string{"content", "reasoning_content", "reasoning", "tool_calls", "function_call"}
)

// fields reads an object whose members of interest are names (at most 8), calling read with
// the index in names of each one present once the scanner stands before its value; read reads
// the value. Other members are skipped. It gives up (false) on a member present twice or one
// whose key equals a name only regardless of case: encoding/json keeps the last of repeated
// members and matches keys regardless of case.
func (s *scanner) fields(names []string, read func(field int) bool) bool {
	if !s.byte('{') {
		return false
	}
	var seen uint8
	return s.members(func(key []byte) bool {
		field := slices.Index(names, string(key))
		if field < 0 {
			return !foldsTo(key, names) && s.value(0)
		}
		if seen&(1<<field) != 0 {
			return false
		}
		seen |= 1 << field
		return read(field)
	})
}

// choices reads the "choices" array (or null) into f.
func (s *scanner) choices(f *chunkFacts) bool {
	if s.literal("null") {
		return true
	}
	if !s.byte('[') {
		return false
	}
	return s.elements(func() bool {
		f.choices++
		return s.choice(f)
	})
}

// choice reads one member of "choices", which must be an object.
func (s *scanner) choice(f *chunkFacts) bool {
	var (
		index         int64
		text, content string
	)
	ok := s.fields(choiceFields[:], func(field int) (ok bool) {
		switch field {
		case 0:
			index, ok = s.integer()
		case 1:
			text, ok = s.optString()
		default: // delta
			if s.literal("null") {
				return true
			}
			var generated bool
			content, generated, ok = s.delta()
			f.content = f.content || generated
		}
		return ok
	})
	if !ok {
		return false
	}
	if t := text + content; t != "" {
		f.content = true
		if index == 0 {
			f.text0 += t
		}
	}
	return true
}

// delta reads a choice's "delta" object: its content, and whether it carried generated content
// other than that (reasoning, a tool or function call).
func (s *scanner) delta() (content string, generated, ok bool) {
	ok = s.fields(deltaFields[:], func(field int) bool {
		if field >= 3 { // a tool or function call: any value, generated unless empty
			v, ok := s.raw()
			generated = generated || ok && present(v)
			return ok
		}
		v, ok := s.optString()
		if field == 0 {
			content = v
		} else if v != "" {
			generated = true
		}
		return ok
	})
	return content, generated, ok
}

// foldsTo reports whether key equals one of names regardless of case (it is not one of them
// exactly: the caller matched those first).
func foldsTo(key []byte, names []string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}
