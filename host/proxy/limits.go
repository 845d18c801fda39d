package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/openai"
)

// Enter counts one more request held by the router; nil when it may go on (the caller calls
// Leave when it is done), else the 429 for one over server.maxConcurrentRequests.
func (s *Server) Enter() *openai.Error {
	if n := s.active.Add(1); s.o.MaxConcurrentRequests > 0 && n > int64(s.o.MaxConcurrentRequests) {
		s.active.Add(-1)
		return &openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: "router_busy",
			Message: fmt.Sprintf("the router holds its limit of %d concurrent requests (server.maxConcurrentRequests); retry later", s.o.MaxConcurrentRequests)}
	}
	return nil
}

// Leave counts a request the router no longer holds.
func (s *Server) Leave() { s.active.Add(-1) }

// CheckHeaders answers 431 for a header section beyond server.maxHeaders fields or
// server.maxHeaderBytes bytes of names and values.
func (s *Server) CheckHeaders(h http.Header) *openai.Error {
	fields, size := 0, 0
	for name, values := range h {
		fields += len(values)
		for _, v := range values {
			size += len(name) + len(v)
		}
	}
	tooLarge := func(msg string, args ...any) *openai.Error {
		return &openai.Error{Status: http.StatusRequestHeaderFieldsTooLarge, Type: openai.TypeInvalidRequest, Code: "headers_too_large",
			Message: fmt.Sprintf(msg, args...)}
	}
	if s.o.MaxHeaders > 0 && fields > s.o.MaxHeaders {
		return tooLarge("the request has %d header fields; the router takes at most %d (server.maxHeaders)", fields, s.o.MaxHeaders)
	}
	if s.o.MaxHeaderBytes > 0 && size > s.o.MaxHeaderBytes {
		return tooLarge("the request's headers hold %d bytes; the router takes at most %d (server.maxHeaderBytes)", size, s.o.MaxHeaderBytes)
	}
	return nil
}

// MaxBodyBytes is server.maxBodyBytes, the largest request body the router takes.
func (s *Server) MaxBodyBytes() int64 { return s.o.MaxBodyBytes }

// BodyTooLarge is the 413 for a request body beyond MaxBodyBytes.
func (s *Server) BodyTooLarge() *openai.Error {
	return &openai.Error{Status: http.StatusRequestEntityTooLarge, Type: openai.TypeInvalidRequest,
		Message: "the request body is larger than the router's limit of " + strconv.FormatInt(s.o.MaxBodyBytes, 10) + " bytes (server.maxBodyBytes)"}
}

// ReadBodyTimeout is server.readBodyTimeout, how long a request's body may take to arrive after
// its headers (0: no bound).
func (s *Server) ReadBodyTimeout() time.Duration { return s.o.ReadBodyTimeout }

// BodyTimeout is the 408 for a request body that did not arrive within ReadBodyTimeout.
func (s *Server) BodyTimeout() *openai.Error {
	return &openai.Error{Status: http.StatusRequestTimeout, Type: openai.TypeInvalidRequest, Code: "body_timeout",
		Message: fmt.Sprintf("the request body did not arrive within %v (server.readBodyTimeout)", s.o.ReadBodyTimeout)}
}

// readBody reads the request body, at most server.maxBodyBytes (413 beyond) within
// server.readBodyTimeout (408 past it).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *openai.Error) {
	if s.o.ReadBodyTimeout > 0 {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.o.ReadBodyTimeout)) == nil {
			defer func() { _ = rc.SetReadDeadline(time.Time{}) }() // the answer may stream for long
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &tooBig):
		return nil, s.BodyTooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The rest of the body may never come: close the connection after the answer rather than
		// let net/http wait for it to discard it.
		w.Header().Set("Connection", "close")
		return nil, s.BodyTimeout()
	default:
		return nil, openai.BadRequest("", "reading the request body: %v", err)
	}
}
