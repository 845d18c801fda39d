package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The request of OpenAI's Responses API (POST /v1/responses, as vLLM serves it): its prompt.

// responseRoles are the roles of a responses input message.
var responseRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true}

// responseRolesList is responseRoles for error messages.
const responseRolesList = "system, developer, user or assistant"

// responseParts are the content parts of a responses input message: the client's text, an
// earlier answer's text sent back, and chat's text part.
var responseParts = textParts{
	types:   []string{"input_text", "output_text", "text"},
	example: `"input_text"`,
	list:    `"input_text", "output_text" or "text"`,
}

// responsesPrompt renders a responses request as a conversation: the instructions as a system
// turn, then input — a string is one user turn; an array holds input items, a message item
// ({"type":"message"} or no type, with role and content) rendered as chat's messages are, any
// other item (function_call, function_call_output, reasoning …) as Turn(its type, its JSON
// compacted), so the same items always render the same — and last the generation prompt.
func responsesPrompt(raw map[string]json.RawMessage) (string, *Error) {
	instructions, err := optionalString(raw, "instructions")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if instructions != "" {
		b.WriteString(Turn("system", instructions))
	}
	v := raw["input"]
	if isNull(v) {
		return "", BadRequest("input", "input is required (a string or a non-empty array of input items)")
	}
	if s, ok := decodeString(v); ok {
		b.WriteString(Turn("user", s))
		b.WriteString(GenerationPrompt)
		return b.String(), nil
	}
	items, ok := arrayElements(v)
	if !ok && json.Unmarshal(v, &items) != nil {
		return "", BadRequest("input", "input must be a string or an array of input items, got %s", jsonType(v))
	}
	if len(items) == 0 {
		return "", BadRequest("input", "input must not be empty; send a string or an array of input items")
	}
	for i, item := range items {
		if err := inputItem(&b, item, fmt.Sprintf("input[%d]", i)); err != nil {
			return "", err
		}
	}
	b.WriteString(GenerationPrompt)
	return b.String(), nil
}

// inputItem renders one input item (param names it) onto b.
func inputItem(b *strings.Builder, item json.RawMessage, param string) *Error {
	fields, ok := objectMembers(item)
	if !ok && (jsonType(item) != "an object" || json.Unmarshal(item, &fields) != nil) {
		return BadRequest(param, "%s must be an input item (an object such as {\"role\": \"user\", \"content\": \"…\"}), got %s", param, jsonType(item))
	}
	if err := foldedKey(fields, param, "type"); err != nil {
		return err
	}
	typ, err := optionalString(fields, "type")
	if err != nil {
		return BadRequest(param+".type", "%s.%s", param, err.Message)
	}
	if typ != "" && typ != "message" {
		var compact bytes.Buffer
		if json.Compact(&compact, item) != nil { // item is valid JSON: this does not happen
			compact.Reset()
			compact.Write(item)
		}
		b.WriteString(Turn(typ, compact.String()))
		return nil
	}
	if err := foldedKey(fields, param, "role", "content"); err != nil {
		return err
	}
	role, err := requiredString(fields, "role")
	if err != nil {
		return BadRequest(param+".role", "%s.%s", param, err.Message)
	}
	if !responseRoles[role] {
		return BadRequest(param+".role", "%s.role must be %s, got %q", param, responseRolesList, Clip(role))
	}
	content, err := messageContent(fields["content"], param+".content", responseParts)
	if err != nil {
		return err
	}
	b.WriteString(Turn(role, content))
	return nil
}
