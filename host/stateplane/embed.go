package stateplane

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbedConfig configures the NATS server a router runs in its own process: what `make run`, the
// tests and a fleet without a NATS cluster use. Other replicas connect to its address.
type EmbedConfig struct {
	// Listen is the host:port clients connect to; port 0 picks a free one.
	Listen string
	// StoreDir is where JetStream keeps the producers' samples and models; "" makes a temporary
	// directory, removed by Shutdown.
	StoreDir string
	// MaxMemory and MaxStore bound JetStream's memory and file storage, in bytes (0: the
	// server's defaults, three quarters of the machine's memory and 1 TB).
	MaxMemory, MaxStore int64
}

// Embedded is a NATS server running in this process.
type Embedded struct {
	srv     *server.Server
	tempDir string
}

// Embed starts a NATS server with JetStream in this process and waits until it accepts
// connections.
func Embed(cfg EmbedConfig) (*Embedded, error) {
	host, portText, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("stateplane: listen %q: %w", cfg.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("stateplane: listen %q: not a port", cfg.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	e := &Embedded{}
	dir := cfg.StoreDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "foresight-nats-"); err != nil {
			return nil, err
		}
		e.tempDir = dir
	}
	opts := &server.Options{ServerName: "foresight", Host: host, Port: port, JetStream: true, StoreDir: dir,
		JetStreamMaxMemory: cfg.MaxMemory, JetStreamMaxStore: cfg.MaxStore, NoSigs: true, NoLog: true,
		DisableJetStreamBanner: true}
	srv, err := server.NewServer(opts)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("stateplane: the embedded NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		e.cleanup()
		return nil, fmt.Errorf("stateplane: the embedded NATS server did not start listening on %s", cfg.Listen)
	}
	e.srv = srv
	return e, nil
}

// URL is the address clients connect to (nats://host:port).
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Server is the running server (for in-process connections: nats.InProcessServer).
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server and removes its temporary store.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.cleanup()
}

func (e *Embedded) cleanup() {
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}
