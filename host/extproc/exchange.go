package extproc

import (
	"context"
	"net/http"
	"strconv"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/proxy"
)

// maxWholeBytes bounds the non-streamed answer the router holds to measure it; beyond it the
// answer passes through unmeasured.
const maxWholeBytes = 64 << 20

// phase is where an exchange is.
type phase int

const (
	phaseHeaders  phase = iota // waiting for the request's headers
	phaseBody                  // reading the request's body
	phaseDecided               // the request went to an endpoint: waiting for the answer
	phaseAnswer                // the answer's headers came; its body goes by
	phaseAnswered              // the router answered the request itself, or the answer ended
)

// exchange is one ext_proc stream: one HTTP request through the gateway and its answer.
type exchange struct {
	s   *Server
	ctx context.Context

	reqMode, respMode filterv3.ProcessingMode_BodySendMode
	configured        bool // the first message's protocol configuration was read
	phase             phase

	header      http.Header
	api         api
	headersOnly bool // the request's headers ended it: no body
	received    time.Time
	entered     bool // counted in server.maxConcurrentRequests
	body        []byte
	subset      func(endpoints.Endpoint) bool

	routed  *proxy.Routed
	relay   *feed              // a streamed 200 answer's relay
	measure bool               // a whole 200 answer, kept to be measured at its end (until maxWholeBytes)
	whole   []byte             // what came of it
	rename  openai.ModelRename // the client's model back in the whole answer (zero: none)
	hold    bool               // the whole answer is held until its end, to be renamed whole
}

// unsupported is the gRPC error for a message the router cannot take.
func unsupported(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "foresight endpoint picker: "+format, args...)
}

// handle answers one message of the data plane.
func (x *exchange) handle(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
	if !x.configured {
		if err := x.configure(req); err != nil {
			return nil, err
		}
	}
	switch m := req.Request.(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		if x.phase != phaseHeaders {
			return nil, unsupported("request headers came twice")
		}
		if allowed, ok := subsetHint(req.GetMetadataContext()); ok {
			x.subset = func(e endpoints.Endpoint) bool { return allowed[e.HostPort()] }
		}
		return x.requestHeaders(m.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		if x.phase != phaseBody {
			return nil, x.outOfOrder("a request body")
		}
		return x.requestBody(m.RequestBody.GetBody(), m.RequestBody.GetEndOfStream())
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return x.requestTrailers()
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		if x.phase != phaseDecided {
			return nil, x.outOfOrder("response headers")
		}
		x.routed.Served(servedBy(req.GetMetadataContext()))
		return x.responseHeaders(m.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		if x.phase != phaseAnswer {
			return nil, x.outOfOrder("a response body")
		}
		return x.responseBody(m.ResponseBody.GetBody(), m.ResponseBody.GetEndOfStream()), nil
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		if x.phase != phaseAnswer {
			return nil, x.outOfOrder("response trailers")
		}
		return x.responseTrailers(), nil
	default:
		return nil, unsupported("unexpected message %T", req.Request)
	}
}

// outOfOrder is the error for a message that does not fit where the exchange is; after the
// router answered the request itself there is nothing more to process.
func (x *exchange) outOfOrder(what string) error {
	return unsupported("%s came out of order (the exchange is at step %d of headers, body, decided, answer, done)", what, x.phase)
}

// configure reads the body modes from the first message's protocol configuration (sent by Envoy
// 1.33 and later). Without one the modes are the inference gateway's: full-duplex streamed both
// ways. It refuses what cannot carry a pick: observability mode (nobody waits for the answer), and
// request body modes in which Envoy sends the headers on before the body is seen.
func (x *exchange) configure(req *extprocv3.ProcessingRequest) error {
	x.configured = true
	x.reqMode, x.respMode = filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	if pc := req.GetProtocolConfig(); pc != nil {
		x.reqMode, x.respMode = pc.GetRequestBodyMode(), pc.GetResponseBodyMode()
	}
	if req.GetObservabilityMode() {
		return unsupported("observability_mode: the data plane would not wait for the pick; turn it off on the ext_proc filter")
	}
	switch x.reqMode {
	case filterv3.ProcessingMode_BUFFERED, filterv3.ProcessingMode_BUFFERED_PARTIAL, filterv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		return nil
	default:
		return unsupported("request_body_mode %s: the pick depends on the body, which must reach the router before the headers go upstream; use FULL_DUPLEX_STREAMED (the inference gateway's) or BUFFERED", x.reqMode)
	}
}

// requestID is the request's ID once known.
func (x *exchange) requestID() string {
	if x.routed != nil {
		return x.routed.RequestID()
	}
	return ""
}

// answerItself ends the exchange with the router's own answer.
func (x *exchange) answerItself(r *extprocv3.ProcessingResponse) []*extprocv3.ProcessingResponse {
	x.phase = phaseAnswered
	return []*extprocv3.ProcessingResponse{r}
}

// refuse answers the request with e, recorded as a refusal.
func (x *exchange) refuse(e *openai.Error) []*extprocv3.ProcessingResponse {
	x.s.o.Router.Refuse(e)
	return x.answerItself(errorResponse(e, ""))
}

// requestHeaders starts the request: the concurrency bound, the header bounds, and the path,
// which says how the body is read (api.go). Every request goes to an endpoint, none is answered
// by the router's OpenAI API: one whose headers end it (GET /v1/models, a POST without a body) is
// picked at once, by load only; any other waits for its body.
func (x *exchange) requestHeaders(m *extprocv3.HttpHeaders) ([]*extprocv3.ProcessingResponse, error) {
	x.received = x.s.o.Now()
	h, pseudo := headerMap(m.GetHeaders())
	x.header, x.api = h, apiOf(pseudo[":path"])
	if e := x.s.o.Router.Enter(); e != nil {
		return x.refuse(e), nil
	}
	x.entered = true
	if e := x.s.o.Router.CheckHeaders(h); e != nil {
		return x.refuse(e), nil
	}
	x.phase = phaseBody
	if m.GetEndOfStream() {
		x.headersOnly = true
		return x.decide(true)
	}
	if x.reqMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		return nil, nil // the headers' answer waits for the pick
	}
	return []*extprocv3.ProcessingResponse{{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{}}}}, nil
}

// requestBody collects the body; at its end the request is decided.
func (x *exchange) requestBody(piece []byte, eos bool) ([]*extprocv3.ProcessingResponse, error) {
	if int64(len(x.body)+len(piece)) > x.s.o.Router.MaxBodyBytes() {
		return x.refuse(x.s.o.Router.BodyTooLarge()), nil
	}
	x.body = append(x.body, piece...)
	switch {
	case x.reqMode == filterv3.ProcessingMode_BUFFERED_PARTIAL && !eos:
		// Envoy's buffer filled before the body ended: the router never sees the rest.
		return x.refuse(x.s.o.Router.BodyTooLarge()), nil
	case x.reqMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED && !eos:
		return nil, nil // more pieces, or trailers, follow
	}
	// The whole body: at its end, or a buffered body that trailers follow (Envoy waits for this
	// answer before it sends them).
	return x.decide(eos)
}

// requestTrailers ends a full-duplex body (the pick, then the trailers' answer); after a buffered
// body the pick was made and the trailers pass.
func (x *exchange) requestTrailers() ([]*extprocv3.ProcessingResponse, error) {
	trailers := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
		RequestTrailers: &extprocv3.TrailersResponse{}}}
	switch {
	case x.phase == phaseDecided:
		return []*extprocv3.ProcessingResponse{trailers}, nil
	case x.phase != phaseBody:
		return nil, x.outOfOrder("request trailers")
	}
	resps, err := x.decide(false)
	if err != nil || x.phase == phaseAnswered { // refused: the immediate response ends the exchange
		return resps, err
	}
	return append(resps, trailers), nil
}

// decide has the request decided and answers with the pick, or with the router's refusal. In
// full-duplex mode the answer is the headers' (the pick) then the body's, which the router sends
// on itself; eos says whether the body ends the request (else trailers follow). A request without
// a body gets the pick in the headers' answer alone, whatever the mode.
func (x *exchange) decide(eos bool) ([]*extprocv3.ProcessingResponse, error) {
	rewrite := x.respMode != filterv3.ProcessingMode_NONE // the answer can be edited: hide the usage the router asks for
	routed, ref := x.route(rewrite)
	if ref != nil {
		x.phase = phaseAnswered
		r := errorResponse(ref.Err, ref.RequestID)
		if ref.Decision != nil {
			r.GetImmediateResponse().Headers.SetHeaders = append(r.GetImmediateResponse().Headers.SetHeaders,
				setHeaders(proxy.HeaderDecision, string(ref.Decision)).SetHeaders...)
		}
		droppedHeaders(r, ref.Dropped)
		return []*extprocv3.ProcessingResponse{r}, nil
	}
	x.routed, x.phase, x.body = routed, phaseDecided, nil
	dest, md := destination(routed.Destinations(), x.s.o.Destination == config.DestinationList)
	body := routed.Body()
	mutation := setHeaders(HeaderDestination, dest, proxy.HeaderRequestID, routed.RequestID())
	switch name, prefill := routed.PrefillHeader(); {
	case prefill != "": // the decode endpoint's sidecar runs the prefill hop there first
		mutation.SetHeaders = append(mutation.SetHeaders, setHeaders(name, prefill).SetHeaders...)
	case name != "": // served whole: a client's own header must not send it elsewhere
		mutation.RemoveHeaders = append(mutation.RemoveHeaders, name)
	}
	common := &extprocv3.CommonResponse{HeaderMutation: mutation, ClearRouteCache: true}
	if x.headersOnly {
		return []*extprocv3.ProcessingResponse{{DynamicMetadata: md,
			Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: common}}}}, nil
	}
	mutation.SetHeaders = append(mutation.SetHeaders, setHeaders("content-length", strconv.Itoa(len(body))).SetHeaders...)
	if x.reqMode != filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		common.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}}
		return []*extprocv3.ProcessingResponse{{DynamicMetadata: md,
			Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: common}}}}, nil
	}
	resps := []*extprocv3.ProcessingResponse{{DynamicMetadata: md,
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: common}}}}
	for _, c := range chunks(body, eos) {
		resps = append(resps, bodyResponse(c, false))
	}
	return resps, nil
}

// bodyResponse sends a streamed piece of body on: a request body's, or a response body's.
func bodyResponse(c *extprocv3.StreamedBodyResponse, response bool) *extprocv3.ProcessingResponse {
	br := &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{
		BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{StreamedResponse: c}}}}
	if response {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: br}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: br}}
}

// close ends the exchange when the stream does: an answer still under way is finished with cause,
// and the request leaves the concurrency count.
func (x *exchange) close(cause string) {
	if x.routed != nil { // before the relay's end: the gateway cut the answer, not the endpoint
		x.routed.Finish(cause)
	}
	if x.relay != nil {
		_, _ = x.relay.end()
	}
	if x.entered {
		x.s.o.Router.Leave()
	}
}
