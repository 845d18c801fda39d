package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// isNull reports whether a field is absent or JSON null; both mean "not given".
func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonType names the JSON type of a value for error messages ("a string", "an array", …).
func jsonType(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodeString decodes a JSON string value as json.Unmarshal would; raw is a valid JSON value
// (from a decode or the one-pass reader, which checked it), and ok is false when it is not a
// string. A string without escapes in valid UTF-8 (the usual prompt or message) is its bytes
// between the quotes; any other is unescaped in one pass.
func decodeString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	return unescape(raw), true
}

// promptField is the field that carries kind's input.
func promptField(kind Kind) string {
	switch kind {
	case Chat:
		return "messages"
	case Embeddings, Responses:
		return "input"
	}
	return "prompt"
}

// foldedKey refuses a key of raw that differs from one of names, the fields the router reads
// there, only in case: engines disagree on such a key (one built on encoding/json reads "Stream"
// as stream, one built on pydantic ignores it), so neither reading of it by the router would be
// the engine's every time, and a request the router and its engine read differently gets a
// healthy engine's answers taken for failures. where is the object's parameter ("" at the top
// level). Of several such keys, the first in sorted order is named.
func foldedKey(raw map[string]json.RawMessage, where string, names ...string) *Error {
	var key, name string
	for k := range raw {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) && (key == "" || k < key) {
				key, name = k, n
			}
		}
	}
	if key == "" {
		return nil
	}
	param, in := name, ""
	if where != "" {
		param, in = where+"."+name, where+": "
	}
	return BadRequest(param, "%skey %q differs from %q only in case; field names are case-sensitive (engines disagree on such keys), send %q",
		in, key, name, name)
}

// requiredString returns field name, which must be a non-empty string.
func requiredString(raw map[string]json.RawMessage, name string) (string, *Error) {
	v := raw[name]
	if isNull(v) {
		return "", BadRequest(name, "%s is required", name)
	}
	s, ok := decodeString(v)
	if !ok {
		return "", BadRequest(name, "%s must be a string, got %s", name, jsonType(v))
	}
	if s == "" {
		return "", BadRequest(name, "%s must not be empty", name)
	}
	return s, nil
}

// optionalString returns field name, a string or absent ("").
func optionalString(raw map[string]json.RawMessage, name string) (string, *Error) {
	v := raw[name]
	if isNull(v) {
		return "", nil
	}
	s, ok := decodeString(v)
	if !ok {
		return "", BadRequest(name, "%s must be a string, got %s", name, jsonType(v))
	}
	return s, nil
}

// optionalBool returns field name, a boolean or absent (false); param is how errors name it.
func optionalBool(raw map[string]json.RawMessage, name, param string) (bool, *Error) {
	v := raw[name]
	if isNull(v) {
		return false, nil
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		return false, BadRequest(param, "%s must be a boolean, got %s", param, jsonType(v))
	}
	return b, nil
}

// optionalCount returns field name, a non-negative integer or absent; present reports which.
func optionalCount(raw map[string]json.RawMessage, name string) (n int64, present bool, err *Error) {
	v := raw[name]
	if isNull(v) {
		return 0, false, nil
	}
	if t := jsonType(v); t != "a number" {
		return 0, false, BadRequest(name, "%s must be a non-negative integer, got %s", name, t)
	}
	n, perr := strconv.ParseInt(string(v), 10, 64)
	if perr != nil {
		// 100.0 or 1e2 is still a whole number; 1.5 and 1e30 are not.
		f, ferr := strconv.ParseFloat(string(v), 64)
		if ferr != nil || f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
			return 0, false, BadRequest(name, "%s must be a non-negative integer, got %s", name, v)
		}
		n = int64(f)
	}
	if n < 0 {
		return 0, false, BadRequest(name, "%s must be a non-negative integer, got %d", name, n)
	}
	return n, true, nil
}

// maxTokens returns the output limit: for chat max_completion_tokens wins over the deprecated
// max_tokens, as in vLLM and OpenAI; for completions max_tokens; for responses
// max_output_tokens; embeddings generate nothing. 0 when unset.
func maxTokens(kind Kind, raw map[string]json.RawMessage) (int64, *Error) {
	switch kind {
	case Embeddings:
		return 0, nil
	case Responses:
		n, _, err := optionalCount(raw, "max_output_tokens")
		return n, err
	}
	n, _, err := optionalCount(raw, "max_tokens")
	if err != nil || kind != Chat {
		return n, err
	}
	m, ok, err := optionalCount(raw, "max_completion_tokens")
	if err != nil {
		return 0, err
	}
	if ok {
		return m, nil
	}
	return n, nil
}

// streamOptions validates stream_options and returns include_usage. vLLM rejects stream_options
// on a request that does not stream; so does the router, before spending a scheduling cycle.
func streamOptions(raw map[string]json.RawMessage, stream bool) (bool, *Error) {
	v := raw["stream_options"]
	if isNull(v) {
		return false, nil
	}
	var opts map[string]json.RawMessage
	if jsonType(v) != "an object" || json.Unmarshal(v, &opts) != nil {
		return false, BadRequest("stream_options", "stream_options must be an object such as {\"include_usage\": true}, got %s", jsonType(v))
	}
	if !stream {
		return false, BadRequest("stream_options", "stream_options is only allowed when stream is true")
	}
	if err := foldedKey(opts, "stream_options", "include_usage"); err != nil {
		return false, err
	}
	return optionalBool(opts, "include_usage", "stream_options.include_usage")
}

// completionPrompt returns a completions prompt: a string, or an array of one string.
func completionPrompt(raw map[string]json.RawMessage) (string, *Error) {
	const accepted = "prompt must be a string or an array of one string"
	v := raw["prompt"]
	if isNull(v) {
		return "", BadRequest("prompt", "prompt is required (a string)")
	}
	if s, ok := decodeString(v); ok {
		return s, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil {
		return "", BadRequest("prompt", "%s, got %s", accepted, jsonType(v))
	}
	switch {
	case len(items) == 0:
		return "", BadRequest("prompt", "%s, got an empty array", accepted)
	case jsonType(items[0]) != "a string":
		return "", BadRequest("prompt", "%s; token-id arrays are not supported, send the text", accepted)
	case len(items) > 1:
		return "", BadRequest("prompt", "%s; arrays of %d prompts are not supported, send one request per prompt", accepted, len(items))
	}
	s, ok := decodeString(items[0])
	if !ok {
		return "", BadRequest("prompt", "%s, got an array holding %s", accepted, jsonType(items[0]))
	}
	return s, nil
}

// roles are the chat roles accepted.
var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// rolesList is roles for error messages.
const rolesList = "system, developer, user, assistant, tool or function"

// chatPrompt renders messages: Turn(role, content) per message, then the generation prompt.
func chatPrompt(raw map[string]json.RawMessage) (string, *Error) {
	v := raw["messages"]
	if isNull(v) {
		return "", BadRequest("messages", "messages is required (a non-empty array of {\"role\", \"content\"} objects)")
	}
	// One pass for the common case; a failure is looked at again for a precise message.
	msgs, ok := messageMaps(v)
	if !ok && json.Unmarshal(v, &msgs) != nil {
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return "", BadRequest("messages", "messages must be an array of {\"role\", \"content\"} objects, got %s", jsonType(v))
		}
		for i, m := range items {
			if jsonType(m) != "an object" {
				return "", notObject(i, m)
			}
		}
		return "", BadRequest("messages", "messages must be an array of {\"role\", \"content\"} objects")
	}
	if len(msgs) == 0 {
		return "", BadRequest("messages", "messages must not be empty")
	}
	var b strings.Builder
	for i, fields := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		if fields == nil {
			return "", notObject(i, json.RawMessage("null"))
		}
		if err := foldedKey(fields, param, "role", "content"); err != nil {
			return "", err
		}
		role, err := requiredString(fields, "role")
		if err != nil {
			return "", BadRequest(param+".role", "%s.%s", param, err.Message)
		}
		if !roles[role] {
			return "", BadRequest(param+".role", "%s.role must be %s, got %q", param, rolesList, Clip(role))
		}
		content, err := messageContent(fields["content"], param+".content", chatParts)
		if err != nil {
			return "", err
		}
		b.WriteString(Turn(role, content))
	}
	b.WriteString(GenerationPrompt)
	return b.String(), nil
}

// messageMaps reads messages, an array of objects, in one pass (objectMembers); ok is false
// when it is not one or the one-pass reader is unsure, and json.Unmarshal then decides.
func messageMaps(v json.RawMessage) ([]map[string]json.RawMessage, bool) {
	items, ok := arrayElements(v)
	if !ok {
		return nil, false
	}
	msgs := make([]map[string]json.RawMessage, len(items))
	for i, item := range items {
		if msgs[i], ok = objectMembers(item); !ok {
			return nil, false
		}
	}
	return msgs, true
}

// notObject is the error for message i that is not an object.
func notObject(i int, m json.RawMessage) *Error {
	param := fmt.Sprintf("messages[%d]", i)
	return BadRequest(param, "%s must be an object with role and content, got %s", param, jsonType(m))
}

// textParts are the content parts a message's array content may hold: parts of these types,
// each with a "text" string.
type textParts struct {
	types   []string
	example string // a type for the example in messages: "text"
	list    string // types for messages: "text", or "input_text", "output_text" or "text"
}

// chatParts are chat's content parts.
var chatParts = textParts{types: []string{"text"}, example: `"text"`, list: `"text"`}

// messageContent returns a message's text: a string, null or absent (""), or an array of
// text parts ({"type":"text","text":…} for chat), concatenated.
func messageContent(v json.RawMessage, param string, tp textParts) (string, *Error) {
	if isNull(v) {
		return "", nil
	}
	if s, ok := decodeString(v); ok {
		return s, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(v, &parts) != nil {
		return "", BadRequest(param, "%s must be a string or an array of text parts, got %s", param, jsonType(v))
	}
	var b strings.Builder
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		var part map[string]json.RawMessage // its keys exactly, as for every object the router reads
		if jsonType(p) != "an object" || json.Unmarshal(p, &part) != nil {
			return "", BadRequest(pp, "%s must be a {\"type\": %s, \"text\": …} object, got %s", pp, tp.example, jsonType(p))
		}
		if err := foldedKey(part, pp, "type", "text"); err != nil {
			return "", err
		}
		var typ string
		if json.Unmarshal(part["type"], &typ) != nil {
			return "", BadRequest(pp+".type", "%s.type must be the string %s, got %s", pp, tp.list, jsonType(part["type"]))
		}
		if !slices.Contains(tp.types, typ) {
			return "", BadRequest(pp+".type", "%s has type %q; only %s parts are supported", pp, Clip(typ), tp.list)
		}
		text, ok := decodeString(part["text"])
		if !ok {
			return "", BadRequest(pp+".text", "%s.text must be a string, got %s", pp, jsonType(part["text"]))
		}
		b.WriteString(text)
	}
	return b.String(), nil
}
