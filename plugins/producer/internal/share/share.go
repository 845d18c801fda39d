// Package share lets the producers of several router replicas learn from each other's samples
// through a directory on a shared volume (a ReadWriteMany volume: NFS-like semantics, where a
// rename is atomic, files written elsewhere appear after a delay, and modification times come
// from other machines' clocks). There is no leader and no cluster protocol: each replica
// publishes the samples it observed and reads the others'.
//
// Layout of the share directory (which must exist: a missing one is an unmounted volume, not a
// directory to create):
//
//	samples/<replica>.<seq>                   the rows a replica observed between two exchanges
//	samples/.tmp-<nonce>-<replica>.<seq>      a file being written (readers ignore dot files)
//	models/<replica>/                         the replica's latest models (internal/model's layout)
//
// A writer writes a file under a temporary name, syncs it and renames it into place, so a reader
// sees a whole file or none; a header (format version) and a footer (length and SHA-256) still let
// a reader detect and skip a torn, corrupt or foreign file. Each replica keeps its newest Keep
// files. Readers order a replica's files by their sequence numbers, never by modification times,
// and judge a replica gone when its sequence has not advanced for PeerTimeout by their own clock
// (the producer's cycle time), so clock skew between machines reorders or expires nothing. A gone
// replica's files are removed by whichever replica notices first; the rows already merged stay in
// each store until its own policy ages them out.
//
// NATSExchanger gives the same semantics through NATS JetStream instead of a directory, for
// clusters without a shared volume (nats.go describes its stream and object store).
package share

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Subdirectories of the share directory.
const (
	SamplesDir = "samples"
	ModelsDir  = "models"
	tempPrefix = ".tmp-"
)

// idPattern is what a replica ID may be: a Kubernetes pod name or host name fits.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$`)

// CheckID returns an error unless id can name a replica's files.
func CheckID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%q is not a replica ID: 1–253 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", id)
	}
	return nil
}

// Config configures an Exchanger.
type Config struct {
	// Dir is the share directory; ReplicaID names this replica's files (see CheckID).
	Dir, ReplicaID string
	// Keep is how many of its newest files the replica keeps.
	Keep int
	// PeerTimeout is how long a replica's sequence may stand still, by this replica's clock,
	// before it is taken as gone and its files are removed.
	PeerTimeout time.Duration
}

// Outgoing is what one exchange publishes of this replica.
type Outgoing struct {
	// Rows are the samples observed since the last exchange that published; none writes no file.
	Rows []sdk.Sample
	// Model, when not nil, is a model set to publish for replicas that start later.
	Model *model.Set
}

// Report says what one exchange did.
type Report struct {
	// Published is the rows written (0 when there were none or the write failed);
	// ModelPublished whether Outgoing's model was written.
	Published      int
	ModelPublished bool
	// Merged and Files are the peers' rows and files handed to merge; Invalid the files skipped.
	Merged, Files, Invalid int
	// Removed is the files and directories of gone replicas removed.
	Removed int
}

// Exchanger publishes one replica's samples and reads the others'. It is not safe for concurrent
// use: the producer runs one exchange at a time.
type Exchanger struct {
	cfg   Config
	nonce uint64

	started   bool
	next      uint64          // the sequence number of the next file to write
	recovered uint64          // the newest own file found at start (a previous run's)
	written   map[uint64]bool // own files this run wrote and still keeps
	conflict  bool            // another writer uses this replica ID (warned once)

	peers    map[string]*peer
	invalid  map[string]int // file name → failed reads, while the file is listed
	failures int            // exchanges failed in a row
}

// peer is what this replica knows of another: the newest sequence number it has seen, when (by
// this replica's clock) it last saw it advance, and the files it merged (of those still listed).
type peer struct {
	newest     uint64
	advancedAt time.Time
	merged     map[uint64]bool
	maxMerged  uint64
}

// New returns an exchanger for cfg, which draws its nonce now.
func New(cfg Config) *Exchanger {
	return &Exchanger{cfg: cfg, nonce: rand.Uint64(), written: map[uint64]bool{}, peers: map[string]*peer{},
		invalid: map[string]int{}}
}

// Config returns the exchanger's configuration.
func (e *Exchanger) Config() Config { return e.cfg }

// Limits are what a reconfiguration may change of an exchanger between two exchanges.
type Limits struct {
	// Keep is how many of its newest files a replica keeps (the file exchange), or how many
	// periods of samples the stream keeps (the NATS exchange: Keep × Period).
	Keep int
	// Period is the producer's time between two exchanges; only the NATS exchange uses it.
	Period time.Duration
	// PeerTimeout is how long a replica may publish nothing, by this replica's clock, before it
	// is taken as gone.
	PeerTimeout time.Duration
}

// SetLimits changes Keep and PeerTimeout (a reconfiguration that keeps the directory and ID).
func (e *Exchanger) SetLimits(l Limits) {
	e.cfg.Keep, e.cfg.PeerTimeout = l.Keep, l.PeerTimeout
}

// Close releases nothing: the file exchange holds no resource between exchanges.
func (e *Exchanger) Close() error { return nil }

// Failures is the number of exchanges that failed in a row (0 when the last one succeeded).
func (e *Exchanger) Failures() int { return e.failures }

// NextSeq is the sequence number the next published file gets.
func (e *Exchanger) NextSeq() uint64 { return e.next }

// Exchange publishes out.Rows as this replica's next file (nothing when there are none) and
// out.Model as its models, hands merge
// the rows of every peer file not merged yet (a file at a time, each replica's in sequence
// order, replicas in name order), and removes the files of replicas gone for PeerTimeout. On its
// first call it continues the sequence of this replica's previous run and merges that run's
// files (a restarted producer gets its own samples back). now is this replica's clock; the zero
// time means unknown, and then no replica is judged gone.
//
// It returns an error when the share directory cannot be used or rows could not be published:
// the caller keeps what was not published and tries again at the next exchange. An invalid file is not an
// error: it is skipped with a warning and read again next time (a file that arrived torn through
// a cache may be whole later).
func (e *Exchanger) Exchange(now time.Time, out Outgoing, merge func(replica string, rows []sdk.Sample)) (Report, error) {
	var rep Report
	err := e.exchange(now, out, merge, &rep)
	e.health(err)
	return rep, err
}

func (e *Exchanger) exchange(now time.Time, out Outgoing, merge func(string, []sdk.Sample), rep *Report) error {
	if err := e.ready(); err != nil {
		return err
	}
	l, err := e.list()
	if err != nil {
		return err
	}
	if !e.started {
		e.recover(l, merge, rep)
		e.started = true
	}
	e.checkConflict(l)
	var pubErr error
	if len(out.Rows) > 0 {
		if pubErr = e.publish(out.Rows); pubErr == nil {
			rep.Published = len(out.Rows)
			l.files[e.cfg.ReplicaID] = append(l.files[e.cfg.ReplicaID], e.next-1)
		}
	}
	if out.Model != nil {
		if err := e.publishModel(out.Model); err != nil {
			pubErr = errors.Join(pubErr, fmt.Errorf("share: publishing the models: %w", err))
		} else {
			rep.ModelPublished = true
		}
	}
	rep.Removed += e.pruneOwn(l)
	e.track(now, l)
	e.readPeers(l, merge, rep)
	rep.Removed += e.collect(now, l)
	return pubErr
}

// ready checks that the share directory exists and makes its subdirectories.
func (e *Exchanger) ready() error {
	st, err := os.Stat(e.cfg.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("share directory %s does not exist: mount the shared volume there (or create it)", e.cfg.Dir)
	case err != nil:
		return fmt.Errorf("share directory: %w", err)
	case !st.IsDir():
		return fmt.Errorf("share directory %s is not a directory", e.cfg.Dir)
	}
	for _, sub := range []string{SamplesDir, ModelsDir} {
		if err := os.Mkdir(filepath.Join(e.cfg.Dir, sub), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("share directory: %w", err)
		}
	}
	return nil
}

// recover continues this replica's sequence after its newest file (a previous run's), merges
// those files and removes the temporary files it left.
func (e *Exchanger) recover(l *listing, merge func(string, []sdk.Sample), rep *Report) {
	id := e.cfg.ReplicaID
	seqs := l.files[id]
	if len(seqs) > 0 {
		e.recovered = seqs[len(seqs)-1]
		for _, seq := range seqs {
			if f := e.read(id, seq, rep); f != nil {
				merge(id, f.Samples)
				rep.Merged += len(f.Samples)
			}
		}
		sdk.Log().Info().Str("replica", id).Uint64("seq", e.recovered).Int("files", len(seqs)).
			Msg("share: continuing this replica's sequence and taking back its samples")
	}
	e.next = e.recovered + 1
	for _, name := range l.temps[id] {
		_ = os.Remove(filepath.Join(e.cfg.Dir, SamplesDir, name))
	}
	delete(l.temps, id)
}

// checkConflict notices files under this replica's ID that this run did not write: another
// producer was given the same ID. Their sequence numbers collide with this run's, so it warns
// (once) and moves its own sequence past theirs.
func (e *Exchanger) checkConflict(l *listing) {
	for _, seq := range l.files[e.cfg.ReplicaID] {
		if seq > e.recovered && !e.written[seq] {
			if !e.conflict {
				e.conflict = true
				sdk.Log().Error().Str("replica", e.cfg.ReplicaID).Uint64("seq", seq).Str("dir", e.cfg.Dir).
					Msg("share: another producer publishes under this replica ID; give every producer sharing the directory its own replicaID (samples of both are lost or merged twice until then)")
			}
			e.next = max(e.next, seq+1)
		}
	}
}

// publish writes rows as file e.next: to a temporary name, synced, then renamed into place.
func (e *Exchanger) publish(rows []sdk.Sample) error {
	data, err := Encode(&File{ReplicaID: e.cfg.ReplicaID, Seq: e.next, Nonce: e.nonce, Samples: rows})
	if err != nil {
		return fmt.Errorf("share: %w", err)
	}
	dir := filepath.Join(e.cfg.Dir, SamplesDir)
	tmp := filepath.Join(dir, tempName(e.nonce, e.cfg.ReplicaID, e.next))
	if err := writeSynced(tmp, data); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("share: publishing samples: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, fileName(e.cfg.ReplicaID, e.next))); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("share: publishing samples: %w", err)
	}
	e.written[e.next] = true
	e.next++
	return nil
}

// pruneOwn removes this replica's files beyond its newest Keep and returns how many it removed.
func (e *Exchanger) pruneOwn(l *listing) int {
	id := e.cfg.ReplicaID
	seqs := l.files[id]
	removed := 0
	for len(seqs) > e.cfg.Keep {
		if err := os.Remove(filepath.Join(e.cfg.Dir, SamplesDir, fileName(id, seqs[0]))); err == nil || errors.Is(err, fs.ErrNotExist) {
			removed++
		}
		delete(e.written, seqs[0])
		seqs = seqs[1:]
	}
	l.files[id] = seqs
	return removed
}

// health logs the share directory's state when it changes: a warning at the first failure, an
// info line when an exchange succeeds again.
func (e *Exchanger) health(err error) {
	switch {
	case err != nil && e.failures == 0:
		sdk.Log().Warn().Err(err).Str("dir", e.cfg.Dir).
			Msg("share: exchange failed; the producer learns from its own samples and tries again every sharePeriodMs")
	case err != nil:
		sdk.Log().Debug().Err(err).Int("failures", e.failures+1).Msg("share: exchange failed again")
	case e.failures > 0:
		sdk.Log().Info().Str("dir", e.cfg.Dir).Int("failed_exchanges", e.failures).Msg("share: exchanges work again")
	}
	if err != nil {
		e.failures++
	} else {
		e.failures = 0
	}
}
