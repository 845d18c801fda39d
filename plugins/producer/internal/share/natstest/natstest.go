// Package natstest runs a NATS server with JetStream inside a test, for the tests of the
// producer's exchange through NATS. Only tests import it.
package natstest

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded NATS server with JetStream on 127.0.0.1, storing in a test directory.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
	// URL is the server's client URL (nats://127.0.0.1:<port>).
	URL string
}

// Start starts a server on a free port; edit, when given, changes its options first. The test's
// cleanup shuts it down.
func Start(t testing.TB, edit ...func(*server.Options)) *Server {
	t.Helper()
	s := &Server{t: t, opts: server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true}}
	for _, f := range edit {
		f(&s.opts)
	}
	s.start()
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port // a restart listens there again
	s.URL = s.srv.ClientURL()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		s.t.Fatal("the NATS server did not start")
	}
	s.srv = srv
}

// Stop shuts the server down (nothing when it is down).
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart starts the server again on the same port with the same store, as a restarted pod.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Running reports whether the server is up.
func (s *Server) Running() bool { return s.srv != nil }
