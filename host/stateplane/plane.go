// Package stateplane shares what each router replica has in flight with the others, so that
// every replica's in-flight ledger and prefix index cover the whole fleet's requests and not only
// its own.
//
// Each replica publishes its dispatches, first tokens and completions (with the prompt's and the
// answer's prefix blocks) on <prefix>.state.<replica>, batched over PublishInterval, and a
// snapshot of its requests in flight every SnapshotInterval. Every replica applies the others'
// messages to its own ledger and index, under IDs of their own (a peer's request never counts
// twice, nor in place of this replica's). The snapshot makes the view converge whatever was lost:
// it replaces the peer's requests, and it is the peer's heartbeat. A peer not heard from for
// PeerTimeout is forgotten, its requests with it; a replica that loses its connection forgets
// every peer at once (its own view, never stale counts) and asks them all for snapshots when it
// is back.
//
// The transport is NATS (nats.go): core publish and subscribe, with no persistence, since every
// message is superseded by the next snapshot. Live, a subscription applies a message when it
// arrives, at the router's clock. The simulator drives a plane by hand instead (Manual): Flush
// publishes what is pending at a virtual time, and Deliver applies the messages whose time plus a
// delay has come, so runs repeat.
package stateplane

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/inflight"
	"github.com/rs/zerolog"
)

// Config configures a Plane.
type Config struct {
	// Replica is this replica's ID, unique among the replicas sharing Prefix (see CheckReplica).
	Replica string
	// Prefix is the subjects' first tokens: replicas of one fleet share it; another fleet on the
	// same NATS uses another.
	Prefix string
	// PublishInterval is how long an event may wait for others to share its message: the bound
	// it adds to propagation, traded against a message per event. 0 publishes each at once.
	PublishInterval time.Duration
	// SnapshotInterval is the time between two snapshots of this replica's requests in flight:
	// how soon a peer's view recovers from anything lost, and how fresh a peer's output counts are.
	SnapshotInterval time.Duration
	// PeerTimeout is how long a peer may go unheard before it is forgotten (a few snapshots).
	PeerTimeout time.Duration
	// MaxPeerFlights bounds the requests kept of one peer; beyond it, its dispatches are dropped
	// and counted.
	MaxPeerFlights int
	// Manual is the simulator's mode: no timers, no goroutines; the caller calls Flush, Deliver
	// and Expire with its virtual time.
	Manual bool
	// Now is the clock of the ledger's dispatch times (the endpoint set's); time.Now when nil.
	Now func() time.Time
	// Propagation, when set, is given every live message's age at arrival (its receive time minus
	// its sentAt, both by the clocks of the machines involved).
	Propagation func(time.Duration)
	Log         zerolog.Logger
}

// Defaults for Config's zero fields; docs/configuration.md says where they come from.
const (
	DefaultPrefix           = "foresight"
	DefaultPublishInterval  = time.Millisecond
	DefaultSnapshotInterval = 500 * time.Millisecond
	DefaultPeerTimeout      = 3 * time.Second
	DefaultMaxPeerFlights   = 1 << 16
)

var replicaPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]{0,251}[A-Za-z0-9])?$`)

// CheckReplica returns an error unless id can name a replica in a subject: a Kubernetes pod name
// fits (letters, digits, '-' and '_'; no '.', which separates a subject's tokens).
func CheckReplica(id string) error {
	if !replicaPattern.MatchString(id) {
		return fmt.Errorf("%q is not a replica ID: 1–253 letters, digits, '_' or '-', starting and ending with a letter or digit", id)
	}
	return nil
}

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// CheckPrefix returns an error unless p can start a subject.
func CheckPrefix(p string) error {
	if !prefixPattern.MatchString(p) {
		return fmt.Errorf("%q is not a subject prefix: tokens of letters, digits, '_' or '-', separated by '.'", p)
	}
	return nil
}

// Plane is one replica's side of the state plane. Its methods are safe for concurrent use.
type Plane struct {
	cfg         Config
	incarnation uint64
	subject     string // this replica's
	link        link   // nil until started
	live        *live  // a started live plane's connection; nil otherwise
	manual      *inbox // a started manual plane's received messages; nil otherwise

	mu      sync.Mutex // guards the publishing side
	pending []byte     // events not yet published
	events  int        // in pending
	firstAt time.Time  // when pending's first event came, live
	seq     uint64     // of the last message published
	epoch   uint64     // of the last snapshot
	key     uint64     // of the last dispatch
	own     map[uint64]*ownFlight
	timer   *time.Timer // the pending batch's flush, live
	stats   Stats

	peers peers
}

// link is what carries messages: NATS live, or the simulator's hub.
type link interface {
	publish(subject string, data []byte) error
}

type ownFlight struct {
	decoding bool // its first token was published
	endpoint string
	output   int64
	tpotSLO  float64
	flight   *inflight.Flight
}

// Stats counts what the plane did since it started.
type Stats struct {
	// Published counts the messages sent, PublishedEvents the events among them and
	// SnapshotsPublished the snapshots; PublishFailures the messages that could not be sent
	// (disconnected), which the next snapshot makes good.
	Published, PublishedEvents, SnapshotsPublished, PublishFailures uint64
	// Received counts the peers' messages; Applied their events; Invalid the messages not read
	// (another format version, malformed); Gaps the messages found missing in a peer's sequence.
	Received, Applied, Invalid, Gaps uint64
	// Snapshots counts the peers' snapshots applied; Expired the peers forgotten for silence;
	// Partitions the times this replica lost its connection and forgot every peer.
	Snapshots, Expired, Partitions uint64
	// Dropped counts peers' dispatches not kept (a peer beyond MaxPeerFlights).
	Dropped uint64
	// Peers and PeerFlights are the peers heard and their requests in flight, now; Connected
	// whether the plane's connection is up.
	Peers, PeerFlights int
	Connected          bool
}

// New returns a plane for cfg, with its defaults filled in. Nothing is published until Attach.
func New(cfg Config) (*Plane, error) {
	if err := CheckReplica(cfg.Replica); err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if err := CheckPrefix(cfg.Prefix); err != nil {
		return nil, err
	}
	if cfg.PublishInterval < 0 {
		cfg.PublishInterval = DefaultPublishInterval
	}
	if cfg.SnapshotInterval <= 0 {
		cfg.SnapshotInterval = DefaultSnapshotInterval
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	if cfg.MaxPeerFlights <= 0 {
		cfg.MaxPeerFlights = DefaultMaxPeerFlights
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Plane{cfg: cfg, incarnation: rand.Uint64() | 1, subject: cfg.Prefix + ".state." + cfg.Replica,
		own: map[uint64]*ownFlight{}}
	p.peers.init(p)
	return p, nil
}

// Config returns the plane's configuration, defaults filled in.
func (p *Plane) Config() Config { return p.cfg }

// Subjects returns the subjects the plane's messages go to: the replicas' (a wildcard) and the
// requests for snapshots.
func (p *Plane) Subjects() (state, sync string) {
	return p.cfg.Prefix + ".state.*", p.cfg.Prefix + ".sync"
}

// Stats returns the plane's counters.
func (p *Plane) Stats() Stats {
	p.mu.Lock()
	s := p.stats
	s.Connected = p.live != nil && p.live.nc.IsConnected() || p.manual != nil
	p.mu.Unlock()
	p.peers.stats(&s)
	return s
}
