package emulator

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/foresight-router/foresight/sim/engine"
)

// Fleet is a set of emulated servers, each listening on its own 127.0.0.1 port.
type Fleet struct {
	servers []*Server
	https   []*http.Server
	addrs   []string
}

// Start starts n servers of the engine fleet spec (a preset, or a mixed fleet: engine.Fleet),
// listening on 127.0.0.1:basePort+i (basePort 0 picks free ports; Addrs reports them). Server i's
// engine noise is seeded with seed+i; opts apply to every server. On error, whatever was started
// is stopped.
func Start(n, basePort int, preset string, seed uint64, opts ...Option) (*Fleet, error) {
	if n < 1 {
		return nil, fmt.Errorf("number of servers must be at least 1, got %d", n)
	}
	if basePort < 0 || (basePort > 0 && basePort+n-1 > 65535) {
		return nil, fmt.Errorf("base port must be 0 (ephemeral) or leave room for %d ports below 65536, got %d", n, basePort)
	}
	cfgs, err := engine.Fleet(preset, n)
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	for i, c := range cfgs {
		c.Seed = seed + uint64(i)
		srv, err := NewServer(c, DefaultModel, opts...)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("starting server %d: %w", i, err)
		}
		port := 0
		if basePort > 0 {
			port = basePort + i
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			srv.Close()
			f.Close()
			return nil, fmt.Errorf("starting server %d: %w", i, err)
		}
		hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
		f.servers = append(f.servers, srv)
		f.https = append(f.https, hs)
		f.addrs = append(f.addrs, ln.Addr().String())
		go func() { _ = hs.Serve(ln) }() // returns ErrServerClosed after Close
	}
	return f, nil
}

// Servers returns the servers, in the order of Addrs.
func (f *Fleet) Servers() []*Server { return append([]*Server(nil), f.servers...) }

// Addrs returns the servers' host:port addresses, in order.
func (f *Fleet) Addrs() []string { return append([]string(nil), f.addrs...) }

// WriteAddrs writes the servers' addresses as `foresight emulate` prints them, one
// "  http://HOST:PORT" line each, in order, followed on the line by "kv-events ADDR replay ADDR"
// when the server publishes KV-cache events; ReadAddrs and ReadKVEventsAddrs read them back.
func (f *Fleet) WriteAddrs(w io.Writer) error {
	for i, a := range f.addrs {
		line := "  http://" + a
		if s := f.servers[i]; s.KVEventsAddr() != "" {
			line += "  kv-events " + s.KVEventsAddr() + " replay " + s.KVEventsReplayAddr()
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// ReadAddrs returns the server addresses in out, a fleet's WriteAddrs among other lines, in order.
func ReadAddrs(out string) []string {
	var addrs []string
	for _, f := range addrLines(out) {
		addrs = append(addrs, strings.TrimPrefix(f[0], "http://"))
	}
	return addrs
}

// ReadKVEventsAddrs returns the KV-cache event publisher and replay addresses of the servers in
// out, as ReadAddrs does their addresses ("" for a server without).
func ReadKVEventsAddrs(out string) (pubs, replays []string) {
	for _, f := range addrLines(out) {
		pub, replay := "", ""
		if len(f) >= 5 && f[1] == "kv-events" && f[3] == "replay" {
			pub, replay = f[2], f[4]
		}
		pubs, replays = append(pubs, pub), append(replays, replay)
	}
	return pubs, replays
}

// addrLines returns the fields of out's lines that WriteAddrs wrote.
func addrLines(out string) [][]string {
	var lines [][]string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "http://") {
			lines = append(lines, f)
		}
	}
	return lines
}

// KVEventsAddrs returns the servers' KV-cache event publisher addresses, in order ("" without).
func (f *Fleet) KVEventsAddrs() []string {
	out := make([]string, len(f.servers))
	for i, s := range f.servers {
		out[i] = s.KVEventsAddr()
	}
	return out
}

// Stop stops server i, dropping its open connections, as an engine that dies does; the others
// serve on. Close stops it again harmlessly.
func (f *Fleet) Stop(i int) {
	_ = f.https[i].Close()
	f.servers[i].Close()
}

// Close stops every server, dropping open connections.
func (f *Fleet) Close() {
	for _, hs := range f.https {
		_ = hs.Close()
	}
	for _, s := range f.servers {
		s.Close()
	}
}
