package predictor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/foresight-router/foresight/plugins/producer/internal/features"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/share"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// exchanger is what the producer needs of an exchange with the other replicas: through a share
// directory (share.Exchanger) or through NATS JetStream (share.NATSExchanger).
type exchanger interface {
	Exchange(now time.Time, out share.Outgoing, merge func(replica string, rows []sdk.Sample)) (share.Report, error)
	BestModel(ttft, tpot []string, usable func(*model.Meta) bool) (*model.Set, string)
	SetLimits(share.Limits)
	Failures() int
	Close() error
}

// sharing is the producer's side of the exchange with the other replicas (internal/share):
// what waits to be published, and when the last exchange was. The producer's lock guards it,
// except the exchanger itself, which only the one exchange running uses.
type sharing struct {
	ex     exchanger
	target shareTarget
	// busy says an exchange of this exchanger runs; one replaced meanwhile is closed when it ends.
	busy    bool
	period  time.Duration
	maxRows int
	// keep and peerTimeout are the exchanger's limits, handed to it when no exchange runs.
	keep        int
	peerTimeout time.Duration
	// pending are the samples this replica accepted since the last exchange that published, the
	// newest maxRows of them; dropped counts the older ones let go while the share was down.
	pending []sdk.Sample
	dropped uint64
	// last is the cycle time (Unix ns) at which the last exchange started; exchanged says one did.
	last      int64
	exchanged bool
	// own is the newest model set this producer trained, and published the version of it last
	// written to the share; trained says the producer trained once (it then stops looking for
	// the other replicas' models).
	own       *model.Set
	published uint64
	trained   bool
}

// The environment the router gives every plugin process when it runs a state plane on NATS.
const (
	// NATSURLEnv holds the state plane's server URLs, which shareNATS "host" uses.
	NATSURLEnv = "FORESIGHT_NATS_URL"
	// NATSPrefixEnv holds the state plane's subject prefix (share.DefaultNATSPrefix when unset).
	NATSPrefixEnv = "FORESIGHT_NATS_PREFIX"
	// ReplicaIDEnv holds the router's replica ID, the first default of replicaID.
	ReplicaIDEnv = "FORESIGHT_REPLICA_ID"
)

// replicaIDEnv are the variables a replica ID defaults to, in order: the router's own, then
// Kubernetes' downward API by convention, then the host name every container gets.
var replicaIDEnv = []string{ReplicaIDEnv, "POD_NAME", "HOSTNAME"}

// shareTarget is where the producer shares: a directory, NATS servers, or nowhere (both empty).
type shareTarget struct {
	dir                 string
	natsURL, natsPrefix string
	replicaID           string
}

func (t shareTarget) on() bool { return t.dir != "" || t.natsURL != "" }

// newExchanger returns an exchanger for t (which does no I/O before its first exchange).
func (t shareTarget) newExchanger() exchanger {
	if t.dir != "" {
		return share.New(share.Config{Dir: t.dir, ReplicaID: t.replicaID})
	}
	return share.NewNATS(share.NATSConfig{URL: t.natsURL, Prefix: t.natsPrefix, ReplicaID: t.replicaID})
}

// resolveShare completes the sharing parameters and returns where to share: the directory
// resolved like modelDir; shareNATS "host" resolved to the router's state plane ($NATSURLEnv,
// nowhere without it) unless shareDir is set; the prefix from shareNATSPrefix, else
// $NATSPrefixEnv; and the replica ID
// from the environment when not given.
func resolveShare(params *Params) (shareTarget, error) {
	params.ShareDir = sdk.ResolvePath(params.ShareDir)
	var t shareTarget
	switch {
	case params.ShareDir != "":
		t.dir = params.ShareDir
	case params.ShareNATS == ShareNATSHost:
		if t.natsURL = os.Getenv(NATSURLEnv); t.natsURL != "" {
			if err := share.CheckNATSURL(t.natsURL); err != nil {
				return t, fmt.Errorf("parameter \"shareNATS\": %q: $%s: %w", ShareNATSHost, NATSURLEnv, err)
			}
		}
	default:
		t.natsURL = params.ShareNATS
	}
	if t.natsURL != "" {
		t.natsPrefix = share.DefaultNATSPrefix
		if v := params.ShareNATSPrefix; v != "" {
			if err := share.CheckPrefix(v); err != nil {
				return t, fmt.Errorf(`parameter "shareNATSPrefix": %w`, err)
			}
			t.natsPrefix = v
		} else if v := os.Getenv(NATSPrefixEnv); v != "" {
			if err := share.CheckPrefix(v); err != nil {
				return t, fmt.Errorf("parameter \"shareNATS\": $%s: %w", NATSPrefixEnv, err)
			}
			t.natsPrefix = v
		}
	}
	if !t.on() {
		return t, nil
	}
	if params.ReplicaID == "" {
		for _, v := range replicaIDEnv {
			if id := os.Getenv(v); id != "" {
				if err := share.CheckID(id); err != nil {
					return t, fmt.Errorf("parameter \"replicaID\": from $%s: %w", v, err)
				}
				params.ReplicaID = id
				break
			}
		}
	}
	if params.ReplicaID == "" {
		return t, fmt.Errorf(`parameter "replicaID": empty, and none of $%s, $POD_NAME and $HOSTNAME is set; give each replica sharing samples its own ID`, ReplicaIDEnv)
	}
	t.replicaID = params.ReplicaID
	return t, nil
}

// checkShareExplicit returns an error when raw sets both shareDir and shareNATS, even to its
// default "host" (which shareDir otherwise overrides).
func checkShareExplicit(raw []byte, params Params) error {
	var set struct {
		ShareNATS *string `json:"shareNATS"`
	}
	if json.Unmarshal(raw, &set) == nil && set.ShareNATS != nil && *set.ShareNATS != "" && params.ShareDir != "" {
		return errors.New(`parameters "shareDir" and "shareNATS" are both set: share through a directory or through NATS, not both`)
	}
	return nil
}

// configureShare starts, changes or stops sharing to follow t and params, then starts an
// exchange at once (a replica that starts finds the others' samples and models); the caller
// holds mu. A new target (directory or servers and prefix) or replica ID starts afresh, and the
// previous exchanger is closed (when its exchange ends, if one runs: its rows are discarded).
func (p *Producer) configureShare(params Params, t shareTarget) {
	old := p.share
	if !t.on() {
		p.share = nil
		p.retire(old)
		return
	}
	sh := old
	if sh == nil || sh.target != t {
		sh = &sharing{ex: t.newExchanger(), target: t}
		p.share = sh
		p.retire(old)
	}
	sh.keep, sh.peerTimeout = params.ShareKeep, ms(params.SharePeerTimeoutMs)
	sh.period, sh.maxRows = ms(params.SharePeriodMs), params.ShareMaxRows
	p.maybeExchange(true)
}

// retire closes a replaced exchanger, unless its exchange runs (endExchange closes it then).
func (p *Producer) retire(sh *sharing) {
	if sh != nil && sh != p.share && !sh.busy {
		_ = sh.ex.Close()
	}
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// add queues an accepted sample of this replica's for publishing, without what the file does
// not carry (prefix hashes, labels); past maxRows the oldest is let go.
func (sh *sharing) add(s sdk.Sample) {
	s.Request.PrefixBlockHashes, s.Request.Labels = nil, nil
	if len(sh.pending) >= sh.maxRows {
		sh.pending = sh.pending[len(sh.pending)-sh.maxRows+1:]
		sh.dropped++
	}
	sh.pending = append(sh.pending, s)
}

// requeue puts back rows an exchange could not publish, before the ones that arrived since,
// keeping the newest maxRows.
func (sh *sharing) requeue(rows []sdk.Sample) {
	all := append(rows, sh.pending...)
	if n := len(all) - sh.maxRows; n > 0 {
		all = all[n:]
		sh.dropped += uint64(n)
	}
	sh.pending = all
}

// exchange is one exchange, prepared under the producer's lock and run without it (or inline
// with TrainInline, as training is).
type exchange struct {
	sh  *sharing
	now time.Time // the producer's clock; zero before the first cycle or sample
	out share.Outgoing
	// want is set when no model serves and the producer never trained: then the exchange looks
	// for the best model another replica published that these parameters can serve.
	want   bool
	usable func(*model.Meta) bool
}

// maybeExchange starts an exchange when sharing is on, none runs and SharePeriodMs of cycle time
// passed since the last one (or at once with force); the caller holds mu.
func (p *Producer) maybeExchange(force bool) {
	sh := p.share
	if sh == nil || p.exchanging {
		return
	}
	now := p.lastNow.Load()
	if !force && sh.exchanged && now-sh.last < int64(sh.period) {
		return
	}
	x := &exchange{sh: sh, out: share.Outgoing{Rows: sh.pending}, want: p.current().set == nil && !sh.trained,
		usable: p.params.canServe}
	if now != 0 {
		x.now = time.Unix(0, now)
	}
	if sh.own != nil && sh.own.Meta.Version != sh.published {
		x.out.Model = sh.own
	}
	sh.pending = nil
	sh.last, sh.exchanged = now, true
	// No exchange runs: the exchanger is not in use.
	sh.ex.SetLimits(share.Limits{Keep: sh.keep, Period: sh.period, PeerTimeout: sh.peerTimeout})
	p.exchanging, sh.busy = true, true
	if p.params.TrainInline {
		p.endExchange(x.run(p.mergeShared))
		return
	}
	go func() {
		r := x.run(func(rows []sdk.Sample) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.share == sh {
				p.mergeShared(rows)
			}
		})
		p.mu.Lock()
		defer p.mu.Unlock()
		p.endExchange(r)
		p.trained.Broadcast()
	}()
}

// exchanged is what an exchange did.
type exchanged struct {
	x      *exchange
	report share.Report
	err    error
	best   *model.Set // another replica's models to serve; nil when not looked for or none
	from   string
}

// run publishes, merges (merge gets each file's rows) and, when wanted, finds a model to serve.
func (x *exchange) run(merge func([]sdk.Sample)) exchanged {
	r := exchanged{x: x}
	r.report, r.err = x.sh.ex.Exchange(x.now, x.out, func(_ string, rows []sdk.Sample) { merge(rows) })
	if x.want && r.err == nil {
		r.best, r.from = x.sh.ex.BestModel(features.TTFT, features.TPOT, x.usable)
	}
	return r
}

// endExchange takes an exchange's outcome; the caller holds mu. Rows it could not publish wait
// for the next one; another replica's models serve when none does yet and the producer has not
// trained; new rows may make a training due.
func (p *Producer) endExchange(r exchanged) {
	p.exchanging = false
	sh := r.x.sh
	sh.busy = false
	if p.share != sh {
		p.retire(sh)
		return
	}
	if n := r.report.Published; n < len(r.x.out.Rows) {
		sh.requeue(r.x.out.Rows[n:])
	}
	if r.report.ModelPublished {
		sh.published = r.x.out.Model.Meta.Version
	}
	if r.best != nil && p.current().set == nil && !sh.trained {
		if err := p.serveLoaded(r.best); err != nil {
			sdk.Log().Warn().Err(err).Str("peer", r.from).Msg("share: cannot serve the models another replica published")
		} else {
			sdk.Log().Info().Str("peer", r.from).Uint64("model_version", r.best.Meta.Version).
				Uint64("training_rows", r.best.Meta.TrainingRows).Msg("model loaded from the share")
		}
	}
	if r.report.Merged > 0 || r.report.Published > 0 || r.report.Invalid > 0 || r.report.Removed > 0 {
		sdk.Log().Debug().Int("published", r.report.Published).Int("merged", r.report.Merged).Int("files", r.report.Files).
			Int("invalid", r.report.Invalid).Int("removed", r.report.Removed).Uint64("dropped", sh.dropped).Msg("share: exchanged")
	}
	p.maybeTrain()
}

// mergeShared files rows from the share (another replica's, or this replica's from before a
// restart) in the store and teaches them to the prior, as Observe does with this replica's own,
// except that they are not scored as this replica's predictions and do not move its clock
// (their times come from other machines' clocks). The caller holds mu.
func (p *Producer) mergeShared(rows []sdk.Sample) {
	for i := range rows {
		s := &rows[i]
		if ttftTarget(s) <= 0 && tpotTarget(s) <= 0 {
			continue
		}
		p.store.Add(*s)
		p.learnPrior(s)
	}
	p.refreshPrior()
}

// canServe reports whether a model set described by m serves under these parameters: the
// same objective (and quantile), and a prior for residual trees.
func (p Params) canServe(m *model.Meta) bool {
	if m.Objective != "" && m.Objective != p.Objective || p.Objective == ObjectiveQuantile && m.Quantile != p.Quantile {
		return false
	}
	return !m.Residual || p.Prior != PriorOff
}
