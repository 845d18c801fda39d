package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/foresight-router/foresight/host/openai"
)

// ErrShuttingDown is the cause with which a stopping router cancels the requests still in flight
// when its grace (server.shutdownGrace) ends. The proxy tells it from a client that left: such a
// request is answered 503 router_shutting_down (an error event ending a stream that began),
// logged and counted as such, rather than cut with nothing.
var ErrShuttingDown = errors.New("the router is shutting down")

// shuttingDown reports whether ctx was cancelled with ErrShuttingDown.
func shuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShuttingDown)
}

// ShutdownError is the router's answer to a request it cuts at the end of its shutdown grace.
func ShutdownError() *openai.Error {
	return &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServer, Code: "router_shutting_down",
		Message: "the router is shutting down and its grace for requests in flight (server.shutdownGrace) ended; retry the request"}
}

// shutdownStreamError is ShutdownError for a stream that began: it says how much of the answer
// came.
func shutdownStreamError(endpoint string, chunks int) *openai.Error {
	e := ShutdownError()
	e.Message = fmt.Sprintf("the router is shutting down and its grace for requests in flight (server.shutdownGrace) ended after %d content chunks from endpoint %s; the answer is incomplete", chunks, endpoint)
	return e
}

// Cut notes that the router ends the request at the end of its shutdown grace, whatever came of
// its answer so far: Finish records it as ShutdownError's 503, and not against the endpoint.
func (r *Routed) Cut() { r.broken = ErrShuttingDown }
