package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
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

// WriteError writes {"error":{"message":…,"type":…,"param":…,"code":…}} with e.Status (500 when
// unset) and Content-Type application/json. Param and Code are null when empty.
func WriteError(w http.ResponseWriter, e *Error) {
	var b errorBody
	b.Error.Message, b.Error.Type = e.Message, e.Type
	b.Error.Type = cmp.Or(b.Error.Type, TypeServer)
	if e.Param != "" {
		b.Error.Param = &e.Param
	}
	if e.Code != "" {
		b.Error.Code = &e.Code
	}
	status := e.Status
	status = cmp.Or(status, http.StatusInternalServerError)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(b) // a client that went away gets nothing
}
