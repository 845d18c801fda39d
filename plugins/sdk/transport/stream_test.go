package transport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// slowFilter is the wire side of a filter plugin: it answers each request with kept [0] and its
// first cycle's request id as the reason, except that it holds a request for the id "slow" until
// the stream ends.
type slowFilter struct {
	pb.UnimplementedFilterServiceServer
}

func (slowFilter) Filter(s grpc.BidiStreamingServer[pb.FilterRequest, pb.FilterResponse]) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return nil // the host closed or cancelled the stream
		}
		id := req.GetCycles()[0].GetRequest().GetId()
		if id == "slow" {
			<-s.Context().Done()
			return s.Context().Err()
		}
		if err := s.Send(&pb.FilterResponse{Results: []*pb.FilterResult{{Kept: []uint32{0}, Reason: id}}}); err != nil {
			return err
		}
	}
}

// dispenseSlowFilter connects a filter client to slowFilter over a real gRPC connection.
func dispenseSlowFilter(t *testing.T) *FilterClient {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		"filter": &slowFilterPlugin{GRPCPlugin{Stage: sdk.StageFilter}},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense("filter")
	if err != nil {
		t.Fatalf("dispensing the filter: %v", err)
	}
	return raw.(*FilterClient)
}

// slowFilterPlugin serves slowFilter and dispenses the host's filter client.
type slowFilterPlugin struct{ GRPCPlugin }

func (slowFilterPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterFilterServiceServer(s, slowFilter{})
	return nil
}

func TestStreamCallPastDeadlineDropsTheStream(t *testing.T) {
	c := dispenseSlowFilter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.FilterBatch(ctx, []*sdk.Cycle{testCycle("slow")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: got %v, want context.DeadlineExceeded", err)
	}
	if n := len(c.filter.idle); n != 0 {
		t.Errorf("%d idle streams after a timed-out call, want 0 (its late answer would be misread)", n)
	}
	// The next call opens a fresh stream and gets its own answer, not the slow one's.
	got, err := c.FilterBatch(context.Background(), []*sdk.Cycle{testCycle("next")})
	if err != nil || got[0].Value.Reason != "next" {
		t.Fatalf("call after the timeout: got %+v, %v; want reason \"next\"", got, err)
	}
	if n := len(c.filter.idle); n != 1 {
		t.Errorf("%d idle streams after a good call, want 1", n)
	}
}

func TestStreamPoolServesConcurrentCallers(t *testing.T) {
	c := dispenseSlowFilter(t)
	const callers = maxIdleStreams + 4 // the streams beyond maxIdleStreams are closed after use
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			for range 20 {
				got, err := c.FilterBatch(context.Background(), []*sdk.Cycle{testCycle(id)})
				if err != nil || got[0].Value.Reason != id {
					errs <- errors.New("caller " + id + " got another caller's answer or an error")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(c.filter.idle); n > maxIdleStreams || n == 0 {
		t.Errorf("%d idle streams, want between 1 and %d", n, maxIdleStreams)
	}
}
