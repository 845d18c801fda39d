// Package extproc is the router's second front: an endpoint picker for a Kubernetes Inference
// Gateway (Gateway API Inference Extension). The gateway's Envoy asks it, over Envoy's external
// processing gRPC protocol (ext_proc), which model server each request goes to; the router
// decides it with the same pipeline, in-flight ledger, prefix index, producer samples and
// metrics as the requests it proxies itself (host/proxy), and watches the answer go by to learn
// its TTFT and TPOT. The protocol — the request's headers and body in, the picked endpoints out
// in the x-gateway-destination-endpoint header and the envoy.lb dynamic metadata, a subset hint
// in, the endpoint that served it back — is the endpoint picker protocol of the inference
// extension's proposal 004.
package extproc

import (
	"context"
	"io"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/foresight-router/foresight/host/proxy"
)

// The gRPC health services the endpoint picker protocol names: the process is alive, it is ready
// for requests, and the ext_proc service itself (as ready).
const (
	HealthLiveness  = "liveness"
	HealthReadiness = "readiness"
)

// Options configure a Server.
type Options struct {
	// Router decides and accounts for the requests (the OpenAI front's server: both fronts share it).
	Router *proxy.Server
	Log    zerolog.Logger
	// Destination is server.extProcDestination: config.DestinationList names every pick in the
	// destination header, comma-separated; anything else (config.DestinationSingle) names the
	// first there and the second in the metadata's fallback key (envoy.go).
	Destination string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server implements Envoy's ExternalProcessor service as an endpoint picker.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer
	o      Options
	health *health.Server
	// stopping ends with proxy.ErrShuttingDown at Cut: the exchanges still open end with the
	// router's 503.
	stopping context.Context
	cut      context.CancelCauseFunc
}

// New returns a server over o; it answers the health checks NOT_SERVING for readiness until
// SetReady.
func New(o Options) *Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{o: o, health: health.NewServer()}
	s.stopping, s.cut = context.WithCancelCause(context.Background())
	s.health.SetServingStatus(HealthLiveness, healthpb.HealthCheckResponse_SERVING)
	s.SetReady(false)
	return s
}

// Register adds the ext_proc and health services to g.
func (s *Server) Register(g *grpc.Server) {
	extprocv3.RegisterExternalProcessorServer(g, s)
	healthpb.RegisterHealthServer(g, s.health)
}

// SetReady sets the readiness the health services report: the overall service (""), readiness
// and the ext_proc service.
func (s *Server) SetReady(ready bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ready {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range []string{"", HealthReadiness, extprocv3.ExternalProcessor_ServiceDesc.ServiceName} {
		s.health.SetServingStatus(name, st)
	}
}

// Shutdown reports every service NOT_SERVING, liveness included, so health checks stop sending
// new streams while the ones in flight finish.
func (s *Server) Shutdown() { s.health.Shutdown() }

// Process serves one ext_proc stream: one HTTP request and its answer. A message the router
// cannot take (a body mode it does not support, a message out of order) ends the stream with a
// gRPC error, on which the data plane applies its failure mode (GIE's failureMode on the pool:
// FailOpen sends the request on without a pick, FailClose fails it); a request the router
// refuses is an immediate response (429 shed or full, 503 nothing available, 4xx bad input, 408
// a body that did not come within server.readBodyTimeout of the headers). Cut ends it early
// (stop.go).
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	// The exchange's context ends with the stream, or with proxy.ErrShuttingDown at Cut, so that
	// a request waiting for its decision is answered at once.
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	defer context.AfterFunc(s.stopping, func() { cancel(context.Cause(s.stopping)) })()
	x := &exchange{s: s, ctx: ctx}
	defer x.close("the gateway ended the exchange before the answer did")
	msgs := receive(stream)
	body := bodyDeadline{}
	defer body.stop()
	for {
		var (
			resps []*extprocv3.ProcessingResponse
			last  bool // the stream ends after resps
			err   error
		)
		select {
		case m := <-msgs:
			if m.err == io.EOF || status.Code(m.err) == codes.Canceled {
				return nil
			}
			if m.err != nil {
				return m.err
			}
			if resps, err = x.handle(m.req); err != nil {
				s.o.Log.Warn().Err(err).Str("request_id", x.requestID()).Msg("ext_proc stream refused")
				return err
			}
		case <-stream.Context().Done():
			// The gateway ended the stream (its client went away). receive may see it first and
			// stop without handing Recv's error over, so the stream's end is watched here too.
			return nil
		case <-body.after(x):
			resps, last = x.refuse(s.o.Router.BodyTimeout()), true
		case <-s.stopping.Done():
			resps, err = x.cut()
			last = true
		}
		for _, r := range resps {
			if err := stream.Send(r); err != nil {
				return err
			}
		}
		if last {
			return err
		}
	}
}

// received is one message of the data plane, or how its stream ended.
type received struct {
	req *extprocv3.ProcessingRequest
	err error
}

// receive reads the stream's messages on their own goroutine, so that Process also watches the
// body's deadline and the router's shutdown; it stops at the stream's first error, or when
// Process returned (the stream's context ends with it).
func receive(stream extprocv3.ExternalProcessor_ProcessServer) <-chan received {
	msgs := make(chan received)
	go func() {
		for {
			req, err := stream.Recv()
			select {
			case msgs <- received{req, err}:
			case <-stream.Context().Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return msgs
}
