package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Kind is the endpoint a request came to.
type Kind int

// The endpoints.
const (
	Completions Kind = iota // POST /v1/completions
	Chat                    // POST /v1/chat/completions
	Embeddings              // POST /v1/embeddings
	Responses               // POST /v1/responses
)

// String returns "completions", "chat", "embeddings" or "responses".
func (k Kind) String() string {
	switch k {
	case Completions:
		return "completions"
	case Chat:
		return "chat"
	case Embeddings:
		return "embeddings"
	case Responses:
		return "responses"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Path returns the endpoint's URL path: "/v1/completions", "/v1/chat/completions",
// "/v1/embeddings" or "/v1/responses" ("/v1/completions" for an unknown kind).
func (k Kind) Path() string {
	switch k {
	case Chat:
		return "/v1/chat/completions"
	case Embeddings:
		return "/v1/embeddings"
	case Responses:
		return "/v1/responses"
	}
	return "/v1/completions"
}

// conversational reports whether the kind's prompt is a conversation rendered with Turn and
// ending in the generation prompt (chat, responses).
func (k Kind) conversational() bool { return k == Chat || k == Responses }

// Request is a parsed client request.
type Request struct {
	Kind Kind
	// Model is the model the engine is asked for: the client's until SetModel.
	Model string
	// ClientModel is the model the client sent; Model differs from it after SetModel.
	ClientModel  string
	Stream       bool   // always false for embeddings, which do not stream
	IncludeUsage bool   // the client asked for stream_options.include_usage (completions, chat)
	MaxTokens    int64  // max_tokens, max_completion_tokens for chat, max_output_tokens for responses; 0 when unset
	User         string // the "user" field, "" when absent
	// Prompt is the text the model conditions on, serialised deterministically: for completions the
	// prompt string (an array of one string is accepted; token-id arrays and multi-prompt arrays are
	// 400s); for chat every message as Turn(role, content) in order, followed by Turn's prefix for
	// "assistant" (the generation prompt). Text parts of array contents are concatenated; non-text
	// parts are a 400. For responses the instructions as a system turn, then each input item (a
	// message as chat's, another item as Turn(type, its JSON)), then the generation prompt; for
	// embeddings the input's strings joined by "\n" ("" for token-id input).
	Prompt string

	tokens int64                      // the token ids of an embeddings input given as ids; 0 for text
	body   []byte                     // the body as received
	raw    map[string]json.RawMessage // every field of body, to re-encode upstream unchanged
}

// Parse decodes body for kind; the caller enforces its size limit. Parse keeps body (UpstreamBody
// may return it), so the caller must not modify it afterwards. Errors are *Error with Status 400
// whose Message names the field and what is accepted.
//
// Parse checks only what the router relies on and leaves the rest to the engine: max_tokens of 0
// is forwarded (vLLM rejects it, other engines may not), unknown fields pass through. Field names
// are matched exactly, and a key that differs from a field the router reads only in case
// ("Stream") is a 400: engines disagree on whether it is that field.
func Parse(kind Kind, body []byte) (*Request, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, BadRequest("", "request body is empty; send a JSON object with model and %s", promptField(kind))
	}
	raw, ok := objectMembers(body) // one pass for the usual body; encoding/json decides the rest
	if !ok {
		if err := json.Unmarshal(body, &raw); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				return nil, BadRequest("", "invalid JSON body: %v (at byte %d)", err, syn.Offset)
			}
			if !json.Valid(body) {
				return nil, BadRequest("", "invalid JSON body: %v", err)
			}
			return nil, BadRequest("", "request body must be a JSON object, got %s", jsonType(bytes.TrimSpace(body)))
		}
	}
	if raw == nil { // the body was null
		return nil, BadRequest("", "request body must be a JSON object, got null")
	}
	fields, ok := readFields[kind]
	if !ok {
		return nil, BadRequest("", "unsupported endpoint %v", kind)
	}
	r := &Request{Kind: kind, body: body, raw: raw}
	var err *Error
	if err = foldedKey(raw, "", fields...); err != nil {
		return nil, err
	}
	if r.Model, err = requiredString(raw, "model"); err != nil {
		return nil, err
	}
	r.ClientModel = r.Model
	if kind != Embeddings { // an embeddings answer is never streamed; "stream" is the engine's to judge
		if r.Stream, err = optionalBool(raw, "stream", "stream"); err != nil {
			return nil, err
		}
	}
	if kind == Completions || kind == Chat { // responses have no usage to ask for: it is always sent
		if r.IncludeUsage, err = streamOptions(raw, r.Stream); err != nil {
			return nil, err
		}
	}
	if r.User, err = optionalString(raw, "user"); err != nil {
		return nil, err
	}
	if r.MaxTokens, err = maxTokens(kind, raw); err != nil {
		return nil, err
	}
	switch kind {
	case Completions:
		r.Prompt, err = completionPrompt(raw)
	case Chat:
		r.Prompt, err = chatPrompt(raw)
	case Embeddings:
		r.Prompt, r.tokens, err = embeddingsInput(raw)
	case Responses:
		r.Prompt, err = responsesPrompt(raw)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// readFields are the top-level fields Parse reads, by kind: a key differing from one of them only
// in case is refused (foldedKey).
var readFields = map[Kind][]string{
	Completions: {"model", "stream", "stream_options", "user", "max_tokens", "prompt"},
	Chat:        {"model", "stream", "stream_options", "user", "max_tokens", "max_completion_tokens", "messages"},
	Embeddings:  {"model", "user", "input"},
	Responses:   {"model", "stream", "user", "max_output_tokens", "input", "instructions"},
}

// InputTokens is the number of token ids of an embeddings input given as ids, otherwise
// EstimateTokens of the prompt.
func (r *Request) InputTokens() int64 {
	if r.tokens > 0 {
		return r.tokens
	}
	return EstimateTokens(r.Prompt)
}

// HiddenUsage reports whether UpstreamBody asks for usage the client did not ask for: a
// completions or chat stream without stream_options.include_usage. The relay must then remove
// the usage chunk. A responses stream always ends with its usage, and embeddings do not stream:
// for them it is false.
func (r *Request) HiddenUsage() bool {
	return r.Stream && !r.IncludeUsage && (r.Kind == Completions || r.Kind == Chat)
}

// usageOption is what UpstreamBody inserts when the client sent no stream_options.
var usageOption = []byte(`"stream_options":{"include_usage":true},`)

// UpstreamBody returns the JSON body to send to the engine: the client's body unchanged except
// that, after SetModel, "model" holds Model, and, when HiddenUsage, stream_options.include_usage
// is set to true (other stream_options fields preserved), so the router can read the usage block.
// Field order may change; values do not. When nothing changes it returns the client's body
// itself, which the caller must not modify.
func (r *Request) UpstreamBody() ([]byte, error) {
	body, renamed := r.body, r.Model != r.ClientModel
	if renamed {
		var err error
		if body, err = r.modelBody(); err != nil {
			return nil, err
		}
	}
	if !r.HiddenUsage() {
		return body, nil
	}
	opts, ok := r.raw["stream_options"]
	if !ok {
		return insertFirst(body, usageOption), nil // the common case, no re-encoding
	}
	so := map[string]json.RawMessage{}
	if !isNull(opts) {
		if err := json.Unmarshal(opts, &so); err != nil {
			return nil, fmt.Errorf("re-encoding stream_options: %w", err)
		}
	}
	so["include_usage"] = json.RawMessage("true")
	b, err := encode(so)
	if err != nil {
		return nil, fmt.Errorf("re-encoding stream_options: %w", err)
	}
	fields, err := r.fields()
	if err != nil {
		return nil, err
	}
	fields["stream_options"] = b
	out, err := encode(fields)
	if err != nil {
		return nil, fmt.Errorf("re-encoding request body: %w", err)
	}
	return out, nil
}

// fields returns a copy of the body's members, "model" holding Model: what a re-encoded upstream
// body starts from.
func (r *Request) fields() (map[string]json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, len(r.raw)+3)
	for k, v := range r.raw {
		fields[k] = v
	}
	if r.Model != r.ClientModel {
		m, err := encode(r.Model)
		if err != nil {
			return nil, fmt.Errorf("encoding model %q: %w", Clip(r.Model), err)
		}
		fields["model"] = m
	}
	return fields, nil
}

// insertFirst returns a copy of the JSON object body with member (`"name":value,`) inserted as its
// first member, without re-encoding it. body has at least one member after it ("model"), so the
// comma is right.
func insertFirst(body, member []byte) []byte {
	i := bytes.IndexByte(body, '{') + 1
	out := make([]byte, 0, len(body)+len(member))
	return append(append(append(out, body[:i]...), member...), body[i:]...)
}

// encode marshals v without escaping HTML characters, so string values keep their bytes.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
