package router

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/extproc"
)

// extProc is the endpoint picker's gRPC listener (server.extProcListen).
type extProc struct {
	grpc *grpc.Server
	srv  *extproc.Server
	addr string
}

// startExtProc serves the endpoint picker on c.ExtProcListen, over the proxy's server so that
// both fronts share the pipeline, the in-flight ledger, the prefix index and the metrics. It
// reports ready once Start returns (markReady).
func (r *Router) startExtProc(c config.Server) error {
	ln, err := net.Listen("tcp", c.ExtProcListen)
	if err != nil {
		return fmt.Errorf("listening on %s (server.extProcListen): %w", c.ExtProcListen, err)
	}
	g := grpc.NewServer(
		// A buffered body comes in one message: room for the largest body the router takes.
		grpc.MaxRecvMsgSize(int(c.MaxBodyBytes)+1<<20),
		// Envoy keeps its ext_proc connections open and pings them; let it.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	)
	e := &extProc{grpc: g, srv: extproc.New(extproc.Options{Router: r.srv, Log: r.log, Destination: c.ExtProcDestination}), addr: ln.Addr().String()}
	e.srv.Register(g)
	r.ext = e
	r.goRun(func() { _ = g.Serve(ln) })
	return nil
}

// ExtProcAddr is the endpoint picker's address ("" when server.extProcListen is off).
func (r *Router) ExtProcAddr() string {
	if r.ext == nil {
		return ""
	}
	return r.ext.addr
}

// markReady tells the gateway's health checks the endpoint picker takes requests.
func (r *Router) markReady() {
	if r.ext != nil {
		r.ext.srv.SetReady(true)
	}
}

// stopExtProc reports not serving, then lets the streams in flight (answers under way) finish
// until ctx ends; the ones left are then cut (extproc.Server.Cut) and get lastWords to say so
// before the listener stops.
func (r *Router) stopExtProc(ctx context.Context) {
	r.ext.srv.Shutdown()
	done := make(chan struct{})
	go func() { r.ext.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	r.log.Warn().Dur("grace", r.grace).Msg("shutdown grace (server.shutdownGrace) ended: the endpoint picker's exchanges still open end with 503 router_shutting_down")
	r.ext.srv.Cut()
	last := time.NewTimer(lastWords)
	defer last.Stop()
	select {
	case <-done:
	case <-last.C:
		r.ext.grpc.Stop()
		<-done
	}
}
