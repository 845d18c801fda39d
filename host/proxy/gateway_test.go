package proxy

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/rs/zerolog"
)

// newGatewayRouter is a router that decides for a gateway over two endpoints nothing scrapes
// (they stay in the rotation): the tests play the gateway and the engine's answer.
func newGatewayRouter(t *testing.T) (*Server, *endpoints.Set, *logbuf.Buffer) {
	t.Helper()
	set, err := endpoints.New(endpoints.Config{}, []endpoints.Endpoint{{ID: "a", Address: "10.0.0.1:8000"}, {ID: "b", Address: "10.0.0.2:8000"}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	srv, err := New(Options{Pipeline: byID{}, Endpoints: set, MaxBodyBytes: 4096, Decisions: 8, PrefixBlocks: 1024, MaxAttempts: 2, Log: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, set, logs
}

// wantTruncated is the error event ending a stream endpoint a ended after 2 content chunks.
const wantTruncated = `data: {"error":{"message":"endpoint a ended the stream after 2 content chunks without data: [DONE]; the answer is incomplete",` +
	`"type":"server_error","param":null,"code":"upstream_stream_broken"}}` + "\n\n"

// A stream the gateway relays through the router ends with an error event and counts as failed
// (502, against its endpoint) when it breaks off or ends without [DONE]; with [DONE] it was served.
func TestAGatewayStreamWithoutDoneFailed(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		status float64 // in the access line
		failed int     // the endpoint's failed requests in a row
		tail   string  // how what the client got ends
	}{
		{"complete", chunk("Hello") + "data: [DONE]\n\n", 200, 0, "data: [DONE]\n\n"},
		// The engine's connection closed cleanly mid-answer: as a cut, the answer is incomplete.
		{"ended without [DONE]", chunk("Hello") + chunk(" world"), 502, 1, "\n\n" + wantTruncated},
		// Its last event lacks its blank line: the error event must not be read as part of it.
		{"ended inside an event", chunk("Hello") + strings.TrimSuffix(chunk(" world"), "\n\n"), 502, 1, `}]}` + "\n\n" + wantTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, set, logs := newGatewayRouter(t)
			r, ref := srv.Route(context.Background(), openai.Chat, http.Header{}, []byte(chatBody(true, "")), time.Now(), nil, false)
			if ref != nil {
				t.Fatalf("refused: %v", ref.Err)
			}
			r.Status(http.StatusOK)
			var client bytes.Buffer
			if err := r.Relay(&client, strings.NewReader(tt.stream)); err != nil {
				t.Fatalf("relay: %v", err)
			}
			r.Finish("")
			if got := client.String(); !strings.HasPrefix(got, chunk("Hello")) || !strings.HasSuffix(got, tt.tail) {
				t.Errorf("the client got %q; want the events, ending %q", got, tt.tail)
			}
			f := &faultRouter{log: logs}
			if line := f.access(t)[0]; line["status"] != tt.status {
				t.Errorf("access line %v; want status %v", line, tt.status)
			}
			if st, _ := set.Get("a"); st.RequestFailures != tt.failed {
				t.Errorf("endpoint a has %d failed requests in a row; want %d", st.RequestFailures, tt.failed)
			}
		})
	}
}
