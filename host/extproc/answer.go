package extproc

import (
	"net/http"
	"strconv"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/proxy"
)

// responseHeaders reads the answer's status and gives the client the request's ID (and the
// decision trace when asked for). A streamed 200 answer goes through the relay, which times its
// tokens and hides the usage the router asked for (so its length changes: content-length goes);
// a whole 200 answer is kept to be measured at its end; any other, and any answer to a request
// the router did not read (a load-only pick), passes through, not held.
func (x *exchange) responseHeaders(m *extprocv3.HttpHeaders) ([]*extprocv3.ProcessingResponse, error) {
	_, pseudo := headerMap(m.GetHeaders())
	code, err := strconv.Atoi(pseudo[":status"])
	if err != nil {
		return nil, unsupported("response headers without a valid :status (%q)", pseudo[":status"])
	}
	x.routed.Status(code)
	x.phase = phaseAnswer
	mutation := setHeaders(proxy.HeaderRequestID, x.routed.RequestID(), proxy.HeaderDecision, string(x.routed.Decision()))
	switch {
	case code != http.StatusOK || x.respMode == filterv3.ProcessingMode_NONE || x.routed.Opaque():
	case x.routed.Streaming():
		x.relay = startFeed(x.routed.Relay)
		mutation.RemoveHeaders = append(mutation.RemoveHeaders, "content-length")
	default:
		x.measure = true
		// A rewritten model is renamed back in the whole answer, which the router then holds
		// until its end (but in STREAMED mode, which must answer each piece: renamed piece by
		// piece, a name split across two pieces is missed).
		x.rename = x.routed.Rename()
		x.hold = x.rename != (openai.ModelRename{}) && x.respMode != filterv3.ProcessingMode_STREAMED
	}
	resps := []*extprocv3.ProcessingResponse{{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{HeaderMutation: mutation}}}}}
	if m.GetEndOfStream() || x.respMode == filterv3.ProcessingMode_NONE {
		x.endAnswer() // no body will come to the router
	}
	return resps, nil
}

// responseBody passes a piece of the answer on: through the relay for a streamed answer, as it
// is otherwise (kept to be measured when whole). In full-duplex mode every piece goes back as a
// streamed body; in the buffered and streamed modes each piece's answer replaces it.
func (x *exchange) responseBody(piece []byte, eos bool) []*extprocv3.ProcessingResponse {
	out, changed := piece, false
	if x.relay != nil {
		out, changed = x.relay.push(piece), true
	} else if x.measure {
		x.whole = append(x.whole, piece...)
		changed = x.rename != (openai.ModelRename{})
		switch {
		case len(x.whole) > maxWholeBytes: // too large to hold: it passes through unmeasured (what was held, unrenamed)
			out = x.rename.Apply(piece)
			if x.hold {
				out = x.whole
			}
			x.measure, x.hold, x.whole = false, false, nil
		case !x.hold: // renamed piece by piece (STREAMED mode), or passed as it came
			out = x.rename.Apply(piece)
		case eos:
			out = x.rename.Apply(x.whole)
		default: // held until the end
			out = nil
		}
	}
	if eos {
		out = append(out, x.endAnswer()...)
	}
	if x.respMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		resps := []*extprocv3.ProcessingResponse{}
		for _, c := range chunks(out, eos) {
			resps = append(resps, bodyResponse(c, true))
		}
		return resps
	}
	common := &extprocv3.CommonResponse{}
	if changed {
		common.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: out}}
	}
	return []*extprocv3.ProcessingResponse{{Response: &extprocv3.ProcessingResponse_ResponseBody{
		ResponseBody: &extprocv3.BodyResponse{Response: common}}}}
}

// responseTrailers ends the answer. What the relay still held (an event the stream cut short)
// goes on as a last piece of body in full-duplex mode; the other modes cannot send a body
// unasked, so it is logged as dropped.
func (x *exchange) responseTrailers() []*extprocv3.ProcessingResponse {
	var resps []*extprocv3.ProcessingResponse
	if rest := x.endAnswer(); len(rest) > 0 {
		if x.respMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
			for _, c := range chunks(rest, false) {
				resps = append(resps, bodyResponse(c, true))
			}
		} else {
			x.s.o.Log.Warn().Str("request_id", x.routed.RequestID()).Int("bytes", len(rest)).
				Msg("the answer's trailers came while the relay held an unfinished event; it is dropped")
		}
	}
	return append(resps, &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
		ResponseTrailers: &extprocv3.TrailersResponse{}}})
}

// endAnswer ends the answer: the relay's end (what it still held is returned), the measure of a
// whole answer, and the request's outcome.
func (x *exchange) endAnswer() []byte {
	var rest []byte
	switch {
	case x.relay != nil:
		rest, _ = x.relay.end() // how the stream ended is the routed request's to record
	case x.measure:
		x.routed.Whole(x.whole)
	}
	x.measure, x.whole = false, nil
	x.routed.Finish("")
	x.phase = phaseAnswered
	return rest
}

// droppedHeaders gives the immediate response of a request that flow control answered itself
// (a 429 or 503: its TTL ran out, its band was full, no endpoint) the reason, under the router's
// header and llm-d's, as the OpenAI front sends it. reason "" adds nothing.
func droppedHeaders(r *extprocv3.ProcessingResponse, reason string) {
	if reason == "" {
		return
	}
	ir := r.GetImmediateResponse()
	ir.Headers.SetHeaders = append(ir.Headers.SetHeaders,
		setHeaders(proxy.HeaderDroppedReason, reason, proxy.HeaderDroppedReasonAlias, reason).SetHeaders...)
}
