package extproc

import (
	"bytes"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/proxy"
)

// Cut ends every exchange still open, at the end of the router's shutdown grace
// (server.shutdownGrace), with the router's 503 router_shutting_down as far as the exchange's
// step allows (exchange.cut). It is safe to call more than once.
func (s *Server) Cut() { s.cut(proxy.ErrShuttingDown) }

// errCut ends a stream that Cut ended where the router can send the data plane nothing more: it
// applies its failure mode to the request.
var errCut = status.Error(codes.Unavailable, "foresight endpoint picker: "+proxy.ErrShuttingDown.Error())

// cut ends the exchange with the router's 503, recorded as such in the access log and the
// metrics: an immediate response while the client has nothing yet, an error event ending a
// streamed answer the router relays (full-duplex mode), else the stream's end (errCut). A stream
// on which no request came yet just ends.
func (x *exchange) cut() ([]*extprocv3.ProcessingResponse, error) {
	e := proxy.ShutdownError()
	switch x.phase {
	case phaseHeaders:
		return nil, errCut
	case phaseBody: // nothing went upstream
		return x.refuse(e), nil
	case phaseDecided: // the answer's headers did not come yet
		x.routed.Cut()
		x.routed.Finish("")
		return x.answerItself(errorResponse(e, x.routed.RequestID())), nil
	case phaseAnswer:
		return x.cutAnswer(e)
	default: // answered
		return nil, nil
	}
}

// cutAnswer ends an answer under way: what the relay still held, then the error event, as the
// last piece of body when the router relays a stream in full-duplex mode.
func (x *exchange) cutAnswer(e *openai.Error) ([]*extprocv3.ProcessingResponse, error) {
	relayed := x.relay != nil && x.respMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	var rest []byte
	if x.relay != nil {
		rest, _ = x.relay.end()
		x.relay = nil
	}
	x.routed.Cut()
	x.routed.Finish("")
	x.phase = phaseAnswered
	if !relayed {
		return nil, errCut
	}
	buf := bytes.NewBuffer(rest)
	_ = openai.WriteStreamError(buf, x.routed.Kind(), e, len(rest) > 0 && !bytes.HasSuffix(rest, []byte("\n\n")))
	var resps []*extprocv3.ProcessingResponse
	for _, c := range chunks(buf.Bytes(), true) {
		resps = append(resps, bodyResponse(c, true))
	}
	return resps, nil
}
