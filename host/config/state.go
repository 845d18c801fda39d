package config

import (
	"cmp"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/stateplane"
)

// State shares each replica's requests in flight and prefix records with the other replicas of
// a fleet, over NATS (host/stateplane), and the producers' samples and models through JetStream.
// Without the section a router counts only its own requests.
type State struct {
	// NATS is where the state plane runs.
	NATS StateNATS `yaml:"nats"`
	// Replica is this replica's ID, unique in the fleet (default $POD_NAME, then $HOSTNAME).
	Replica string `yaml:"replica"`
	// Prefix starts every subject (default "foresight"): replicas of one fleet share it; another
	// fleet on the same NATS takes another.
	Prefix string `yaml:"prefix"`
	// PublishInterval batches a replica's events for at most this long (default 1ms; 0 publishes
	// each at once).
	PublishInterval *time.Duration `yaml:"publishInterval"`
	// SnapshotInterval is the time between two snapshots of a replica's requests in flight
	// (default 500ms); PeerTimeout forgets a replica not heard from for this long (default 3s).
	SnapshotInterval time.Duration `yaml:"snapshotInterval"`
	PeerTimeout      time.Duration `yaml:"peerTimeout"`
}

// StateNATS says which NATS the state plane uses: a cluster's URL, or a server embedded in this
// router (which other replicas reach at its listen address). Exactly one is given.
type StateNATS struct {
	// URL lists the NATS servers, comma-separated (nats://host:4222,...).
	URL string `yaml:"url"`
	// Embedded runs a NATS server with JetStream in this router.
	Embedded *StateEmbedded `yaml:"embedded"`
}

// StateEmbedded configures the embedded NATS server.
type StateEmbedded struct {
	// Listen is the address other replicas connect to (default 127.0.0.1:4222).
	Listen string `yaml:"listen"`
	// StoreDir keeps JetStream's data (default: a temporary directory, removed at exit).
	StoreDir string `yaml:"storeDir"`
}

// DefaultStateListen is the embedded server's default address: NATS's port, on loopback only.
const DefaultStateListen = "127.0.0.1:4222"

// EmbeddedState returns a state section with its defaults that runs a NATS server in the router on
// a free loopback port, for replica: what the demo gives its router, so that another replica can
// join it (Router.StateURL names the server).
func EmbeddedState(replica string) *State {
	s := &State{NATS: StateNATS{Embedded: &StateEmbedded{Listen: "127.0.0.1:0"}}, Replica: replica}
	s.applyDefaults()
	return s
}

// replicaEnv are the variables a replica ID defaults to, in order: Kubernetes' downward API by
// convention, then the host name every container gets.
var replicaEnv = []string{"POD_NAME", "HOSTNAME"}

func (s *State) applyDefaults() {
	if s == nil {
		return
	}
	s.Prefix = cmp.Or(s.Prefix, stateplane.DefaultPrefix)
	if s.PublishInterval == nil {
		d := stateplane.DefaultPublishInterval
		s.PublishInterval = &d
	}
	s.SnapshotInterval = cmp.Or(s.SnapshotInterval, stateplane.DefaultSnapshotInterval)
	s.PeerTimeout = cmp.Or(s.PeerTimeout, stateplane.DefaultPeerTimeout)
	if e := s.NATS.Embedded; e != nil {
		e.Listen = cmp.Or(e.Listen, DefaultStateListen)
	}
	for _, v := range replicaEnv {
		if s.Replica != "" {
			break
		}
		s.Replica = os.Getenv(v)
	}
}

// validateState checks the state section: an error names the field.
func (c *Config) validateState() error {
	s := c.State
	if s == nil {
		return nil
	}
	at := func(field ...any) []any { return append([]any{"state"}, field...) }
	switch {
	case s.NATS.URL == "" && s.NATS.Embedded == nil:
		return c.errorAt(at("nats"), "give url (a NATS cluster) or embedded (a server in this router)")
	case s.NATS.URL != "" && s.NATS.Embedded != nil:
		return c.errorAt(at("nats"), "give url or embedded, not both")
	}
	for _, u := range strings.Split(s.NATS.URL, ",") {
		if s.NATS.URL == "" {
			break
		}
		if p, err := url.Parse(strings.TrimSpace(u)); err != nil || p.Host == "" || (p.Scheme != "nats" && p.Scheme != "tls") {
			return c.errorAt(at("nats", "url"), "%q is not a NATS URL (nats://host:port or tls://host:port)", u)
		}
	}
	if e := s.NATS.Embedded; e != nil {
		if _, _, err := net.SplitHostPort(e.Listen); err != nil {
			return c.errorAt(at("nats", "embedded", "listen"), "%q is not host:port", e.Listen)
		}
	}
	if s.Replica == "" {
		return c.errorAt(at("replica"), "empty, and neither $POD_NAME nor $HOSTNAME is set; give each replica its own ID")
	}
	if err := stateplane.CheckReplica(s.Replica); err != nil {
		return c.errorAt(at("replica"), "%v", err)
	}
	if err := stateplane.CheckPrefix(s.Prefix); err != nil {
		return c.errorAt(at("prefix"), "%v", err)
	}
	switch {
	case *s.PublishInterval < 0 || *s.PublishInterval > time.Second:
		return c.errorAt(at("publishInterval"), "%s is out of range [0, 1s]", *s.PublishInterval)
	case s.SnapshotInterval < 10*time.Millisecond:
		return c.errorAt(at("snapshotInterval"), "%s is below 10ms", s.SnapshotInterval)
	case s.PeerTimeout < 2*s.SnapshotInterval:
		return c.errorAt(at("peerTimeout"), "%s is less than two snapshot intervals (%s): a live replica would be forgotten", s.PeerTimeout, s.SnapshotInterval)
	}
	return nil
}

// PlaneConfig is the state plane's configuration for this section.
func (s *State) PlaneConfig() stateplane.Config {
	return stateplane.Config{Replica: s.Replica, Prefix: s.Prefix, PublishInterval: *s.PublishInterval,
		SnapshotInterval: s.SnapshotInterval, PeerTimeout: s.PeerTimeout}
}
