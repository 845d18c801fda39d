package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// The endpoint picker's bad inputs, rows of the table in docs/operations.md like the others.
func init() {
	duplex, partial := filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, filterv3.ProcessingMode_BUFFERED_PARTIAL
	observed := pickerHeaders(duplex)
	observed.ObservabilityMode = true
	subset := pickerHeaders(duplex)
	subset.MetadataContext = metadata("envoy.lb.subset_hint", "x-gateway-destination-endpoint-subset",
		structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("10.0.0.1:8000")}}))
	mib := strings.Repeat("x", 1<<20)
	tooBig := []*extprocv3.ProcessingRequest{pickerHeaders(duplex)}
	for range 5 {
		tooBig = append(tooBig, pickerBody(mib, false))
	}
	for name, msgs := range map[string][]*extprocv3.ProcessingRequest{
		"a streamed request body mode":              {pickerHeaders(filterv3.ProcessingMode_STREAMED)},
		"observability mode":                        {observed},
		"a body before the headers":                 {pickerBody(chatWith(""), true)},
		"a subset of unknown endpoints":             {subset, pickerBody(chatWith(`,"max_tokens":1`), true)},
		"a body over the limit through the gateway": tooBig,
		"a buffered body Envoy cut short":           {pickerHeaders(partial), pickerBody(`{"model":`, false)},
		"a bad body through the gateway":            {pickerHeaders(duplex), pickerBody(`{"model":`, true)},
		"no body through the gateway":               {pickerHeaders(duplex)}, // the 408 comes at server.readBodyTimeout
	} {
		badInputs[name] = sendToPicker(msgs...)
	}
}

func pickerHeaders(mode filterv3.ProcessingMode_BodySendMode) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: mode, ResponseBodyMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":method", "POST", ":path", "/v1/chat/completions", "content-type", "application/json")}}}
}

func pickerBody(body string, eos bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: eos}}}
}

// sendToPicker sends the messages on one ext_proc stream of the router's endpoint picker and
// returns its first refusal: an immediate response's status and message, or the gRPC status that
// ended the stream ("gRPC InvalidArgument" and its message).
func sendToPicker(msgs ...*extprocv3.ProcessingRequest) badInput {
	return func(t *testing.T, b *badBench) (string, string) {
		conn, err := grpc.NewClient(b.r.ExtProcAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stream, err := extprocv3.NewExternalProcessorClient(conn).Process(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if stream.Send(m) != nil {
				break // the picker ended the stream: Recv says why
			}
		}
		for {
			r, err := stream.Recv()
			if err != nil {
				st := status.Convert(err)
				return "gRPC " + st.Code().String(), st.Message()
			}
			if ir := r.GetImmediateResponse(); ir != nil {
				code, msg := immediateBody(t, ir)
				_, msg, _ = strings.Cut(msg, ": ") // immediateBody puts the error's code first
				return strconv.Itoa(code), msg
			}
		}
	}
}
