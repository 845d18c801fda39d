package share

// The exchange through NATS JetStream: the share directory's semantics for clusters without a
// ReadWriteMany volume, over the router's state plane (its embedded NATS server, or an external
// cluster). P is the subject prefix and N its name form (NATSNames):
//
//	stream N_producer_samples        subjects P.samples.>, limits by age and bytes; a message
//	                                 per published chunk of a replica's rows: subject
//	                                 P.samples.<replica>, payload a samples file (format.go),
//	                                 header Nats-Msg-Id <replica>/<nonce>/<seq>
//	object store N_producer_models   one object per replica, named by its ID: its latest model
//	                                 set (nats_models.go)
//
// An exchange publishes this replica's rows (acknowledged), then reads every message stored up
// to the stream's last sequence at that moment through an ephemeral pull consumer that starts
// after the last message this replica read, so exchanges made one after another in one goroutine
// (the simulator's inline exchanges) see exactly what was published before them. A message is
// read once; this run's own messages (its replica ID and nonce) are skipped, anything else is
// merged: another replica's rows, a previous run's under this replica's ID (a restarted producer
// takes back its rows, as from the share directory), or the rows of another producer given the
// same ID by mistake (warned once).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// Defaults of the NATS exchange.
const (
	// DefaultNATSPrefix is the subject prefix when the router gives none.
	DefaultNATSPrefix = "foresight"
	// DefaultNATSTimeout bounds each request to the servers.
	DefaultNATSTimeout = 5 * time.Second
	// DefaultStreamBytes bounds the samples stream: at 133 bytes a row, two million rows, five
	// minutes of 6,700 samples/s (3,300 requests/s across the fleet). Past it the oldest go.
	DefaultStreamBytes = 256 << 20
	// DefaultModelBytes bounds the models bucket: a set of the default model size is 100 KB.
	DefaultModelBytes = 64 << 20
	// MinStreamAge is the least age the stream keeps samples for, whatever Keep × Period: the
	// servers age messages by their own clock, which a simulation's cycle time can outrun.
	MinStreamAge = time.Minute
)

const (
	natsReconnectWait = 250 * time.Millisecond
	fetchBatch        = 8       // messages a fetch asks for: at most 8 × maxChunkBytes held
	maxChunkBytes     = 1 << 20 // a message's payload at most (and under the server's max_payload)
	chunkHeadroom     = 4 << 10 // for the subject and headers
)

// NATSConfig configures a NATSExchanger.
type NATSConfig struct {
	// URL is the servers: a NATS URL or a comma-separated list (see CheckNATSURL).
	URL string
	// Prefix begins every subject (see CheckPrefix); the stream and the bucket are named after
	// it (NATSNames).
	Prefix string
	// ReplicaID names this replica's subject and model object (see CheckID).
	ReplicaID string
	// Limits: the stream keeps Keep × Period of samples (at least MinStreamAge); a replica that
	// publishes nothing for PeerTimeout is gone.
	Limits
	// Timeout bounds each request (DefaultNATSTimeout when 0); StreamBytes and ModelBytes bound
	// the stream and the bucket when this replica creates them (DefaultStreamBytes and
	// DefaultModelBytes when 0; a quarter at a time less on servers without the room).
	Timeout                 time.Duration
	StreamBytes, ModelBytes int64
}

// NATSExchanger exchanges one replica's samples and models with the others' through NATS
// JetStream, with the semantics of Exchanger. It connects at its first exchange and reconnects
// by itself (nats.go's reconnection: every 250 ms, without end); an exchange while it is not
// connected fails at once. It is not safe for concurrent use: the producer runs one exchange at
// a time.
type NATSExchanger struct {
	cfg            NATSConfig
	nonce          uint64
	subj           string // the samples' subject prefix, "<prefix>.samples."
	stream, bucket string
	own            string // the Nats-Msg-Id prefix of this run's messages

	nc      *nats.Conn
	epoch   *epoch // ends when the connection drops
	js      jetstream.JetStream
	st      jetstream.Stream // the samples stream, as the last exchange found it
	obs     jetstream.ObjectStore
	ready   bool   // the stream and bucket were set up with readyAs since the last failure
	readyAs Limits // the limits they were set up with

	next     uint64 // the File.Seq of the next message
	doubt    *sent  // the message whose publish failed last: perhaps stored
	cursor   uint64 // the stream sequence of the last message read
	created  time.Time
	started  bool
	startSeq uint64 // the stream's last sequence at the first read: older messages predate this run
	conflict bool
	tookBack bool
	peers    map[string]*natsPeer
	listedAt time.Time // when (this replica's clock) the models were last listed to find peers
	failures int
}

// natsPeer is what this replica knows of another: the stream sequence of its newest message
// read, and when (by this replica's clock) it last saw a newer one.
type natsPeer struct {
	newest     uint64
	advancedAt time.Time
}

// sent is a published message: its sequence number in this run, rows and payload.
type sent struct {
	seq  uint64
	rows int
	data []byte
}

// NewNATS returns an exchanger for cfg, which draws its nonce now; it connects at the first
// exchange.
func NewNATS(cfg NATSConfig) *NATSExchanger {
	e := &NATSExchanger{cfg: cfg, nonce: rand.Uint64(), subj: cfg.Prefix + ".samples.", next: 1, peers: map[string]*natsPeer{},
		epoch: newEpoch()}
	e.stream, e.bucket = NATSNames(cfg.Prefix)
	e.own = fmt.Sprintf("%s/%016x/", cfg.ReplicaID, e.nonce)
	return e
}

// Config returns the exchanger's configuration.
func (e *NATSExchanger) Config() NATSConfig { return e.cfg }

// SetLimits changes Keep, Period and PeerTimeout; the next exchange updates the stream's limits.
func (e *NATSExchanger) SetLimits(l Limits) { e.cfg.Limits = l }

// Failures is the number of exchanges that failed in a row (0 when the last one succeeded).
func (e *NATSExchanger) Failures() int { return e.failures }

// Close closes the connection; a later exchange connects again.
func (e *NATSExchanger) Close() error {
	if e.nc != nil {
		e.nc.Close()
		e.nc, e.js, e.st, e.obs, e.ready = nil, nil, nil, nil, false
	}
	return nil
}

// Exchange publishes out.Rows under this replica's subject (in messages of at most 1 MB, each
// acknowledged) and out.Model as its object, hands merge the rows of every message stored up to
// the stream's last sequence that it has not read yet and did not publish itself (a message at a
// time, in the stream's order), and removes the samples and models of replicas that published
// nothing for PeerTimeout. now is this replica's clock; the zero time means unknown, and then no
// replica is judged gone.
//
// It returns an error when the servers cannot be reached or rows could not be published; the
// report's Published says how many of out.Rows, from the first, were: the caller keeps the
// others and hands them to the next exchange. A message whose publish failed is published again
// under its ID when the next exchange starts with the same rows, so that the stream stores it
// once (within its duplicate window, the stream's age) even if the first publish was stored and
// only its acknowledgement lost. An invalid message is skipped with a warning: messages never
// change, so it is not read again.
func (e *NATSExchanger) Exchange(now time.Time, out Outgoing, merge func(replica string, rows []sdk.Sample)) (Report, error) {
	var rep Report
	err := e.exchange(now, out, merge, &rep)
	if err != nil {
		e.ready = false // set the stream and bucket up again: the servers may have lost them
	}
	e.health(err)
	return rep, err
}

func (e *NATSExchanger) exchange(now time.Time, out Outgoing, merge func(string, []sdk.Sample), rep *Report) error {
	if err := e.prepare(); err != nil {
		return err
	}
	var pubErr error
	if len(out.Rows) > 0 {
		rep.Published, pubErr = e.publish(out.Rows)
	}
	if out.Model != nil {
		if err := e.publishModel(out.Model); err != nil {
			pubErr = errors.Join(pubErr, fmt.Errorf("share: publishing the models: %w", err))
		} else {
			rep.ModelPublished = true
		}
	}
	if err := e.read(now, merge, rep); err != nil {
		return errors.Join(pubErr, err)
	}
	return errors.Join(pubErr, e.collect(now, rep))
}

// ctx returns a context that ends after the request timeout, or when the connection drops.
func (e *NATSExchanger) ctx() (context.Context, context.CancelFunc) {
	t := e.cfg.Timeout
	if t <= 0 {
		t = DefaultNATSTimeout
	}
	return context.WithTimeout(e.epoch.get(), t)
}

// epoch is a context that ends when the connection drops, so that the requests in flight fail
// at once rather than at their timeout; the next epoch begins then.
type epoch struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

func newEpoch() *epoch {
	ep := &epoch{}
	ep.ctx, ep.cancel = context.WithCancel(context.Background())
	return ep
}

func (ep *epoch) get() context.Context {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.ctx
}

func (ep *epoch) next() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.cancel()
	ep.ctx, ep.cancel = context.WithCancel(context.Background())
}

// prepare connects (once), checks that the connection is up, and sets the stream and the bucket
// up when they were not since the last failure or the limits changed.
func (e *NATSExchanger) prepare() error {
	if e.nc == nil {
		if err := e.connect(); err != nil {
			return err
		}
	}
	if s := e.nc.Status(); s != nats.CONNECTED {
		err := fmt.Errorf("share: not connected to NATS at %s (%s)", RedactURL(e.cfg.URL), s)
		if last := e.nc.LastError(); last != nil {
			err = fmt.Errorf("%w: %w", err, last)
		}
		return err
	}
	if e.ready && e.readyAs == e.cfg.Limits {
		return nil
	}
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.ensureStream(ctx); err != nil {
		return fmt.Errorf("share: setting up stream %s: %w", e.stream, err)
	}
	if err := e.ensureBucket(ctx); err != nil {
		return fmt.Errorf("share: setting up object store %s: %w", e.bucket, err)
	}
	e.ready, e.readyAs = true, e.cfg.Limits
	return nil
}

func (e *NATSExchanger) connect() error {
	t := e.cfg.Timeout
	if t <= 0 {
		t = DefaultNATSTimeout
	}
	where := RedactURL(e.cfg.URL)
	nc, err := nats.Connect(e.cfg.URL, nats.Name("foresight-producer "+e.cfg.ReplicaID),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(natsReconnectWait),
		nats.ReconnectJitter(100*time.Millisecond, time.Second), nats.ReconnectBufSize(-1), nats.Timeout(t),
		nats.NoCallbacksAfterClientClose(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			e.epoch.next()
			sdk.Log().Debug().Err(err).Str("url", where).Msg("share: disconnected from NATS; reconnecting")
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			sdk.Log().Debug().Str("url", where).Msg("share: connected to NATS")
		}))
	if err != nil {
		return fmt.Errorf("share: connecting to NATS at %s: %w", where, err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(t))
	if err != nil {
		nc.Close()
		return fmt.Errorf("share: %w", err)
	}
	e.nc, e.js = nc, js
	return nil
}

// maxAge is how long the stream keeps a message: Keep × Period, at least MinStreamAge.
func (e *NATSExchanger) maxAge() time.Duration {
	return max(time.Duration(e.cfg.Keep)*e.cfg.Period, MinStreamAge)
}

// ensureStream creates the samples stream, or sets the age and duplicate-window limits of the
// one there, keeping whatever else an operator chose (bytes, replicas, placement, storage).
func (e *NATSExchanger) ensureStream(ctx context.Context) error {
	age := e.maxAge()
	st, err := e.js.Stream(ctx, e.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = shrinking(cmpOr(e.cfg.StreamBytes, DefaultStreamBytes), e.stream, func(bytes int64) error {
			st, err = e.js.CreateStream(ctx, jetstream.StreamConfig{Name: e.stream, Subjects: []string{e.subj + ">"},
				Description: "foresight producers' samples (plugins/producer/internal/share)",
				Retention:   jetstream.LimitsPolicy, Discard: jetstream.DiscardOld, MaxAge: age, MaxBytes: bytes,
				Duplicates: age, Storage: jetstream.FileStorage, Replicas: 1})
			return err
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // another replica's limits, created just now
			st, err = e.js.Stream(ctx, e.stream)
		}
	}
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	if !slices.Contains(cfg.Subjects, e.subj+">") {
		return fmt.Errorf("the stream exists with subjects %q, not %q: another use of the name", cfg.Subjects, e.subj+">")
	}
	if cfg.MaxAge != age || cfg.Duplicates != age {
		cfg.MaxAge, cfg.Duplicates = age, age
		if st, err = e.js.UpdateStream(ctx, cfg); err != nil {
			return err
		}
	}
	e.st = st
	return nil
}

func (e *NATSExchanger) ensureBucket(ctx context.Context) error {
	obs, err := e.js.ObjectStore(ctx, e.bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		err = shrinking(cmpOr(e.cfg.ModelBytes, DefaultModelBytes), e.bucket, func(bytes int64) error {
			obs, err = e.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: e.bucket,
				Description: "foresight producers' models (plugins/producer/internal/share)",
				Storage:     jetstream.FileStorage, MaxBytes: bytes})
			return err
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = e.js.ObjectStore(ctx, e.bucket)
		}
	}
	if err != nil {
		return err
	}
	e.obs = obs
	return nil
}

// minCreateBytes is the least a stream or bucket is created with when the servers lack room.
const minCreateBytes = 4 << 20

// shrinking calls create with bytes, then with a quarter as long as the servers refuse it for want
// of storage (JetStream reserves a stream's max_bytes), down to minCreateBytes.
func shrinking(bytes int64, name string, create func(bytes int64) error) error {
	for {
		err := create(bytes)
		var api *jetstream.APIError
		if err == nil || !errors.As(err, &api) || api.ErrorCode != jsInsufficientResources && api.ErrorCode != jsStorageExceeded ||
			bytes/4 < minCreateBytes {
			return err
		}
		bytes /= 4
		sdk.Log().Warn().Str("name", name).Int64("max_bytes", bytes).
			Msg("share: the NATS servers lack the storage for the default limit; creating it smaller")
	}
}

// JetStream's error codes for a lack of storage.
const (
	jsInsufficientResources jetstream.ErrorCode = 10023
	jsStorageExceeded       jetstream.ErrorCode = 10047
)

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// health logs the connection's state when it changes, as Exchanger's does.
func (e *NATSExchanger) health(err error) {
	where := RedactURL(e.cfg.URL)
	switch {
	case err != nil && e.failures == 0:
		sdk.Log().Warn().Err(err).Str("url", where).
			Msg("share: exchange through NATS failed; the producer learns from its own samples and tries again every sharePeriodMs")
	case err != nil:
		sdk.Log().Debug().Err(err).Int("failures", e.failures+1).Msg("share: exchange through NATS failed again")
	case e.failures > 0:
		sdk.Log().Info().Str("url", where).Int("failed_exchanges", e.failures).Msg("share: exchanges through NATS work again")
	}
	if err != nil {
		e.failures++
	} else {
		e.failures = 0
	}
}
