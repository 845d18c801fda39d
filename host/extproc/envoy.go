package extproc

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/foresight-router/foresight/host/openai"
)

// The names the endpoint picker protocol gives its headers and metadata (Gateway API Inference
// Extension, proposal 004).
const (
	// HeaderDestination and, in the namespace MetadataNamespace, the metadata key of the same
	// name carry the pick: one "ip:port" (config.DestinationSingle), or the picked endpoints
	// separated by commas, the first choice first (config.DestinationList).
	HeaderDestination = "x-gateway-destination-endpoint"
	MetadataNamespace = "envoy.lb"
	// FallbackKey, in MetadataNamespace, carries the second pick when HeaderDestination carries
	// one endpoint: the protocol's fallback endpoint, which a gateway that does not read it ignores.
	FallbackKey = "x-gateway-destination-endpoint-fallback"
	// SubsetNamespace holds SubsetKey, the endpoints the data plane allows for this request.
	SubsetNamespace = "envoy.lb.subset_hint"
	SubsetKey       = "x-gateway-destination-endpoint-subset"
	// ServedKey, in MetadataNamespace on the response's messages, names the endpoint that served
	// the request (after the data plane's retries).
	ServedKey = "x-gateway-destination-endpoint-served"
)

// bodyChunkBytes bounds the body of one streamed body response: some Envoy builds take at most
// 64 KiB per streamed chunk, so stay below it.
const bodyChunkBytes = 62_000

// headerMap reads Envoy's headers into an http.Header, pseudo-headers (":path", ":method",
// ":status") apart. Envoy sends values as raw bytes (raw_value) or, older builds, as value.
func headerMap(m *corev3.HeaderMap) (h http.Header, pseudo map[string]string) {
	h, pseudo = http.Header{}, map[string]string{}
	for _, hv := range m.GetHeaders() {
		v := hv.GetValue()
		if raw := hv.GetRawValue(); len(raw) > 0 {
			v = string(raw)
		}
		if strings.HasPrefix(hv.GetKey(), ":") {
			pseudo[hv.GetKey()] = v
			continue
		}
		h.Add(hv.GetKey(), v)
	}
	return h, pseudo
}

// setHeaders is a header mutation that sets each name to its value, replacing what is there.
func setHeaders(kv ...string) *extprocv3.HeaderMutation {
	m := &extprocv3.HeaderMutation{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		m.SetHeaders = append(m.SetHeaders, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return m
}

// destination is how the pick reaches the data plane: the value of HeaderDestination, and the
// dynamic metadata for its load balancer, which carries the same value under the same name. picks
// are the picked endpoints' host:port, the first choice first (at least one). With list, the value
// is all of them separated by commas; without, it is the first, and the second (when there is
// one) goes in FallbackKey. No picks (they left the fleet since the decision) is an empty value,
// on which the data plane fails the request.
func destination(picks []string, list bool) (header string, md *structpb.Struct) {
	if len(picks) > 0 {
		header = picks[0]
	}
	if list {
		header = strings.Join(picks, ",")
	}
	fields := map[string]*structpb.Value{HeaderDestination: structpb.NewStringValue(header)}
	if !list && len(picks) > 1 {
		fields[FallbackKey] = structpb.NewStringValue(picks[1])
	}
	return header, &structpb.Struct{Fields: map[string]*structpb.Value{
		MetadataNamespace: structpb.NewStructValue(&structpb.Struct{Fields: fields}),
	}}
}

// subsetHint reads the data plane's subset of allowed endpoints from the request's metadata: ok
// is false when it sent none. The list is a list of "ip:port" strings; a single string holding a
// comma-separated list is read too.
func subsetHint(md *corev3.Metadata) (allowed map[string]bool, ok bool) {
	ns := md.GetFilterMetadata()[SubsetNamespace]
	v, ok := ns.GetFields()[SubsetKey]
	if !ok {
		return nil, false
	}
	allowed = map[string]bool{}
	add := func(s string) {
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				allowed[a] = true
			}
		}
	}
	if l := v.GetListValue(); l != nil {
		for _, e := range l.GetValues() {
			add(e.GetStringValue())
		}
	} else {
		add(v.GetStringValue())
	}
	return allowed, true
}

// servedBy reads the endpoint that served the request from a response message's metadata ("" when
// the data plane did not say).
func servedBy(md *corev3.Metadata) string {
	return strings.TrimSpace(md.GetFilterMetadata()[MetadataNamespace].GetFields()[ServedKey].GetStringValue())
}

// immediate is the immediate response that answers the client with what rec holds (the router's
// own answer: an error, GET /v1/models), plus the request ID when known.
func immediate(rec *httptest.ResponseRecorder, requestID string) *extprocv3.ProcessingResponse {
	kv := []string{}
	for name, values := range rec.Header() {
		kv = append(kv, strings.ToLower(name), strings.Join(values, ", "))
	}
	kv = append(kv, "x-request-id", requestID)
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(rec.Code)},
			Headers: setHeaders(kv...),
			Body:    rec.Body.Bytes(),
			Details: "foresight_" + strconv.Itoa(rec.Code),
		},
	}}
}

// errorResponse is the immediate response carrying e in OpenAI's error shape.
func errorResponse(e *openai.Error, requestID string) *extprocv3.ProcessingResponse {
	rec := httptest.NewRecorder()
	openai.WriteError(rec, e)
	return immediate(rec, requestID)
}

// chunks splits body into streamed body mutations of at most bodyChunkBytes; the last carries
// eos. An empty body is one empty chunk.
func chunks(body []byte, eos bool) []*extprocv3.StreamedBodyResponse {
	var out []*extprocv3.StreamedBodyResponse
	for {
		n := min(len(body), bodyChunkBytes)
		last := n == len(body)
		out = append(out, &extprocv3.StreamedBodyResponse{Body: body[:n], EndOfStream: eos && last})
		if last {
			return out
		}
		body = body[n:]
	}
}
