package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Error types used in OpenAI-shaped error bodies.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeRateLimit      = "rate_limit_exceeded"
	TypeServer         = "server_error"
	TypeTimeout        = "timeout"
)

// Error is an OpenAI-shaped error: the HTTP status and the fields of {"error":{…}}.
type Error struct {
	Status  int
	Type    string // "invalid_request_error", "rate_limit_exceeded", "server_error", "timeout" …
	Message string
	Param   string // the offending field or header, "" when none
	Code    string // a machine-readable code, "" when none
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// BadRequest returns an *Error with status 400 and type invalid_request_error about param
// ("" when no single field is at fault).
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// errorBody is the JSON of an error response; empty param and code are null, as OpenAI sends them.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// body returns e's JSON body; Param and Code are null when empty, Type server_error when unset.
func (e *Error) body() errorBody {
	var b errorBody
	b.Error.Message, b.Error.Type = e.Message, cmp.Or(e.Type, TypeServer)
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	if e.Code != "" {
		b.Error.Code = &e.Code
	}
	return b
}

// WriteError writes {"error":{"message":…,"type":…,"param":…,"code":…}} with e.Status (500 when
// unset) and Content-Type application/json. Param and Code are null when empty.
func WriteError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(cmp.Or(e.Status, http.StatusInternalServerError))
	_ = json.NewEncoder(w).Encode(e.body()) // a client that went away gets nothing
}

// WriteStreamError writes e as the event that ends a stream of kind which cannot go on. For
// completions and chat it is data: {"error":{…}} and a blank line, the event OpenAI's client
// libraries raise as an error mid-stream (and vLLM sends when a request fails after its stream
// began); for a Responses stream it is that API's error event, event: error with data:
// {"type":"error","code":…,"message":…,"param":…}. No [DONE] or terminal response event follows,
// so a client that waits for one does not take the answer for complete either. After a partial
// event (StreamResult.Partial) a blank line ends that event first.
func WriteStreamError(w io.Writer, kind Kind, e *Error, partial bool) error {
	var v any = e.body()
	if kind == Responses {
		b := e.body().Error
		v = struct {
			Type    string  `json:"type"`
			Code    *string `json:"code"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
		}{"error", b.Code, b.Message, b.Param}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ev := make([]byte, 0, len(data)+32)
	if partial {
		ev = append(ev, "\n\n"...)
	}
	if kind == Responses {
		ev = append(ev, "event: error\n"...)
	}
	ev = append(append(append(ev, "data: "...), data...), "\n\n"...)
	_, err = w.Write(ev)
	return err
}
