package extproc

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/foresight-router/foresight/host/proxy"
	"github.com/foresight-router/foresight/internal/eventually"
)

// dial serves f's picker on a loopback port and connects to it, until the test ends.
func (f *fixture) dial(t *testing.T) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	f.srv.Register(g)
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// serve serves f's picker on a loopback port and opens one ext_proc stream to it.
func (f *fixture) serve(t *testing.T) extprocv3.ExternalProcessor_ProcessClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	stream, err := extprocv3.NewExternalProcessorClient(f.dial(t)).Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// immediateError reads the stream's next message, which must be an immediate response, and
// returns its status and body.
func immediateError(t *testing.T, stream extprocv3.ExternalProcessor_ProcessClient) (int, string) {
	t.Helper()
	for {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("waiting for an immediate response: %v", err)
		}
		if ir := r.GetImmediateResponse(); ir != nil {
			return int(ir.GetStatus().GetCode()), string(ir.GetBody())
		}
	}
}

// TestABodyThatDoesNotComeIs408: request headers and then nothing are answered 408 body_timeout
// once server.readBodyTimeout has passed, as the OpenAI front answers a body that does not come,
// and the request leaves the concurrency bound (here 1 request) so that it cannot hold it.
func TestABodyThatDoesNotComeIs408(t *testing.T) {
	f := newFixture(t, func(o *proxy.Options) { o.ReadBodyTimeout, o.MaxConcurrentRequests = 50*time.Millisecond, 1 })
	stream := f.serve(t)
	if err := stream.Send(requestHeaders(filterv3.ProcessingMode_FULL_DUPLEX_STREAMED)); err != nil {
		t.Fatal(err)
	}
	code, body := immediateError(t, stream)
	if code != 408 || !strings.Contains(body, `"code":"body_timeout"`) || !strings.Contains(body, "server.readBodyTimeout") {
		t.Errorf("immediate response %d %s: want 408 body_timeout naming server.readBodyTimeout", code, body)
	}
	eventually.Wait(t, 5*time.Second, "the request to leave the concurrency bound", func() bool {
		if f.router.Enter() != nil {
			return false
		}
		f.router.Leave()
		return true
	})
	if line := requestLines(t, f.log)[0]; line["status"] != 408.0 {
		t.Errorf("access line %v: want 408", line)
	}
}
