// Package pluginhost launches and supervises the plugin processes of a pipeline (and provides the
// built-in stages through the same handle): handshake, type and version checks, configuration,
// restart with backoff after a crash, and stop.
package pluginhost

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/foresight-router/foresight/host/builtin"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
)

// Spec says what to run for one plugin.
type Spec struct {
	// Name is the plugin's name in the config; Type the kebab-case type it must report.
	Name, Type string
	// Stage is the stage the pipeline uses the plugin for.
	Stage sdk.Stage
	// Path is the binary (already resolved); empty selects the built-in implementation of Type.
	Path string
	Args []string
	// Env holds "KEY=value" entries added to the host's environment for the process.
	Env []string
	// SHA256 is the expected checksum of the binary in hex; empty skips the check.
	SHA256 string
	// Version is a semver constraint on the binary's reported version; empty accepts any.
	Version string
	// Params is the JSON object sent to Configure.
	Params []byte
	// StartTimeout bounds launch, handshake, GetInfo and Configure (default 10s).
	StartTimeout time.Duration
	// Local, when set, is an in-process implementation used instead of Path or a built-in (for
	// embedding the host and for tests). Its stage methods are called directly on the pipeline's
	// path and must return when their ctx ends, as the built-ins do.
	Local sdk.Plugin
}

// Supervision timing.
const (
	exitPoll       = 20 * time.Millisecond // how often a quiet plugin is checked for having exited
	maxBackoff     = 10 * time.Second      // the longest wait between restart attempts
	firstBackoff   = 100 * time.Millisecond
	healthyRunTime = time.Minute // a plugin that ran this long restarts without delay after a crash
	// hangAfter is how long a process may go on missing its call deadlines, without answering any
	// call in between, before it is taken for hung, killed and restarted like a crashed one.
	// Single misses are normal under load and only cost the cycle its fallback.
	hangAfter = 2 * time.Second
)

// Plugin is one stage implementation in service: a supervised plugin process or a built-in.
// Client returns the stage's client, or nil while a crashed process is being restarted.
type Plugin struct {
	spec Spec
	log  zerolog.Logger

	cur      atomic.Pointer[instance]
	info     atomic.Pointer[sdk.Info] // the last instance's, kept while the process is down
	restarts atomic.Int64
	hangs    atomic.Int64
	// missSince is when the current streak of missed deadlines began (UnixNano; 0: none).
	missSince atomic.Int64
	// lastRestart is how long the last restart took, from seeing the exit to serving again (ns).
	lastRestart atomic.Int64
	stopOnce    sync.Once
	stop        chan struct{}
	done        chan struct{}
	nudge       chan struct{}
}

// instance is one running incarnation of a plugin.
type instance struct {
	client   *plugin.Client // nil for built-ins
	stage    any            // the sdk Batch… interface of the stage
	info     sdk.Info
	pid      int
	protocol int
	startup  time.Duration
	started  time.Time
}

// Launch starts the plugin described by spec and, for a process, supervises it until Stop. Any
// problem (missing binary, checksum, handshake, type, stage, version, rejected parameters) is an
// error naming the plugin and the cause.
func Launch(ctx context.Context, spec Spec, log zerolog.Logger) (*Plugin, error) {
	spec.StartTimeout = cmp.Or(spec.StartTimeout, 10*time.Second)
	p := &Plugin{
		spec:  spec,
		log:   log.With().Str("plugin", spec.Name).Str("stage", spec.Stage.String()).Logger(),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		nudge: make(chan struct{}, 1),
	}
	inst, err := p.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	p.cur.Store(inst)
	p.info.Store(&inst.info)
	if inst.client == nil {
		close(p.done)
	} else {
		go p.supervise()
	}
	return p, nil
}

// Name returns the plugin's configured name.
func (p *Plugin) Name() string { return p.spec.Name }

// Spec returns what the plugin was launched from.
func (p *Plugin) Spec() Spec { return p.spec }

// Client returns the stage client (transport.BatchFilter for a filter, and so on), or nil while the
// process is down.
func (p *Plugin) Client() any {
	if inst := p.cur.Load(); inst != nil {
		return inst.stage
	}
	return nil
}

// Status describes the plugin as it runs now.
type Status struct {
	Name     string   `json:"name"`
	Info     sdk.Info `json:"info"`
	Builtin  bool     `json:"builtin"`
	Up       bool     `json:"up"`
	PID      int      `json:"pid,omitempty"`
	Protocol int      `json:"protocol,omitempty"`
	// StartMs is how long launch, handshake, GetInfo and Configure took for the current instance.
	StartMs  float64 `json:"start_ms"`
	Restarts int64   `json:"restarts"`
	// Hangs counts the times the process was killed for missing its deadlines for hangAfter.
	Hangs int64 `json:"hangs"`
	// LastRestartMs is how long the last restart took, from seeing the exit to serving again.
	LastRestartMs float64 `json:"last_restart_ms,omitempty"`
}

// Status returns the plugin's current state.
func (p *Plugin) Status() Status {
	s := Status{Name: p.spec.Name, Builtin: p.spec.Path == "" || p.spec.Local != nil, Restarts: p.restarts.Load(),
		Hangs: p.hangs.Load(), LastRestartMs: float64(p.lastRestart.Load()/1000) / 1000}
	if info := p.info.Load(); info != nil {
		s.Info = *info // while down: what the process reported when it last started
	}
	if inst := p.cur.Load(); inst != nil {
		s.Up, s.PID, s.Protocol = true, inst.pid, inst.protocol
		s.StartMs = float64(inst.startup.Microseconds()) / 1000
	}
	return s
}

// CallFailed tells the supervisor that a call failed at the transport level, so a dead process is
// noticed at once rather than at the next poll.
func (p *Plugin) CallFailed() {
	select {
	case p.nudge <- struct{}{}:
	default:
	}
}

// CallAnswered tells the supervisor that a call was answered in time, ending any streak of
// missed deadlines.
func (p *Plugin) CallAnswered() {
	if p.missSince.Load() != 0 {
		p.missSince.Store(0)
	}
}

// CallTimedOut tells the supervisor that a call missed its deadline. A process that has missed
// every deadline for hangAfter is killed; the supervisor then restarts it as after a crash.
func (p *Plugin) CallTimedOut() {
	now := time.Now().UnixNano()
	if p.missSince.CompareAndSwap(0, now) {
		return
	}
	since := p.missSince.Load()
	if since == 0 || time.Duration(now-since) < hangAfter || !p.missSince.CompareAndSwap(since, 0) {
		return
	}
	inst := p.cur.Load()
	if inst == nil || inst.client == nil {
		return
	}
	p.hangs.Add(1)
	p.log.Error().Int("pid", inst.pid).Dur("missing_deadlines_for", time.Duration(now-since)).
		Msg("plugin hung: every call missed its deadline; killing it to restart it")
	go inst.client.Kill()
	p.CallFailed()
}

// Stop stops supervision and the process; it is safe to call more than once.
func (p *Plugin) Stop() {
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.done
		if inst := p.cur.Swap(nil); inst != nil && inst.client != nil {
			inst.client.Kill()
		}
	})
}

func (p *Plugin) start(ctx context.Context) (*instance, error) {
	ctx, cancel := context.WithTimeout(ctx, p.spec.StartTimeout)
	defer cancel()
	began := time.Now()
	if p.spec.Path == "" || p.spec.Local != nil {
		return p.startLocal(began)
	}
	log := newZlog(p.log, hclog.Info)
	client, err := p.newClient(log)
	if err != nil {
		return nil, err
	}
	inst, err := p.connect(ctx, client)
	if err != nil {
		log.SetLevel(hclog.Off) // the error says it all; go-plugin's cleanup messages are noise
		client.Kill()
		return nil, err
	}
	inst.startup, inst.started = time.Since(began), time.Now()
	return inst, nil
}

func (p *Plugin) newClient(log hclog.Logger) (*plugin.Client, error) {
	// Run the binary directly, never through a shell, or its exit would go unseen.
	cmd := exec.Command(p.spec.Path, p.spec.Args...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: transport.HostPlugins(),
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env already holds it, before Env so that Env wins
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  transport.DialWindows(),
		StartTimeout:     p.spec.StartTimeout,
		Logger:           log,
	}
	if p.spec.SHA256 != "" {
		sum, err := hex.DecodeString(p.spec.SHA256)
		if err != nil {
			return nil, fmt.Errorf("sha256 %q is not hex: %w", p.spec.SHA256, err)
		}
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	return plugin.NewClient(cfg), nil
}

func (p *Plugin) connect(ctx context.Context, client *plugin.Client) (*instance, error) {
	rpc, err := client.Client()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %s", p.spec.Path, oneLine(err))
	}
	raw, err := rpc.Dispense(p.spec.Stage.String())
	if err != nil {
		return nil, fmt.Errorf("dispensing the %v stage: %s", p.spec.Stage, oneLine(err))
	}
	conf, ok := raw.(transport.Configurer)
	if !ok {
		return nil, fmt.Errorf("the %v client does not speak PluginService", p.spec.Stage)
	}
	inst := &instance{client: client, stage: conf, protocol: client.NegotiatedVersion()}
	if rc := client.ReattachConfig(); rc != nil {
		inst.pid = rc.Pid
	}
	if inst.info, err = conf.Info(ctx); err != nil {
		return nil, fmt.Errorf("asking for its info: %s", oneLine(err))
	}
	if err := p.checkInfo(inst.info); err != nil {
		return nil, err
	}
	if err := conf.Configure(ctx, p.spec.Params); err != nil {
		return nil, fmt.Errorf("configuring: %s", oneLine(err))
	}
	return inst, nil
}

// startLocal configures an in-process implementation: spec.Local, else the built-in of spec.Type.
func (p *Plugin) startLocal(began time.Time) (*instance, error) {
	impl, stage := p.spec.Local, p.spec.Stage
	if impl == nil {
		var err error
		if impl, stage, err = builtin.New(p.spec.Type); err != nil {
			return nil, err
		}
	}
	info := sdk.Info{Type: impl.Type(), Stage: stage, Version: "builtin", Description: impl.Description()}
	if err := p.checkInfo(info); err != nil {
		return nil, err
	}
	if err := impl.Configure(p.spec.Params); err != nil {
		return nil, fmt.Errorf("configuring: %s", oneLine(err))
	}
	return &instance{stage: transport.Local{P: impl}, info: info, startup: time.Since(began), started: time.Now()}, nil
}

// checkInfo verifies that what the binary says it is matches the config.
func (p *Plugin) checkInfo(info sdk.Info) error {
	if info.Type != p.spec.Type {
		return fmt.Errorf("the binary reports type %q but the config declares %q", info.Type, p.spec.Type)
	}
	if info.Stage != p.spec.Stage {
		return fmt.Errorf("type %q serves the %v stage but the pipeline uses it as a %v", info.Type, info.Stage, p.spec.Stage)
	}
	if p.spec.Version == "" || p.spec.Path == "" {
		return nil
	}
	constraint, err := semver.NewConstraint(p.spec.Version)
	if err != nil {
		return fmt.Errorf("invalid version constraint %q: %w", p.spec.Version, err)
	}
	v, err := semver.StrictNewVersion(info.Version)
	if err != nil {
		return fmt.Errorf("the binary reports version %q, which is not semver, so %q cannot be checked", info.Version, p.spec.Version)
	}
	if !constraint.Check(v) {
		return fmt.Errorf("the binary's version %s does not satisfy %q", info.Version, p.spec.Version)
	}
	return nil
}

// supervise waits for the process to exit and restarts it with backoff until Stop.
func (p *Plugin) supervise() {
	defer close(p.done)
	tick := time.NewTicker(exitPoll)
	defer tick.Stop()
	for {
		inst := p.cur.Load()
		for !inst.client.Exited() {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			case <-p.nudge:
			}
		}
		p.cur.Store(nil)
		exited := time.Now()
		inst.client.Kill() // reap and release the connection
		p.log.Error().Dur("ran", time.Since(inst.started)).Int("pid", inst.pid).Msg("plugin process exited; restarting")
		var backoff time.Duration
		if time.Since(inst.started) < healthyRunTime {
			backoff = firstBackoff
		}
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(backoff):
			}
			next, err := p.start(context.Background())
			if err == nil {
				p.cur.Store(next)
				p.info.Store(&next.info)
				p.missSince.Store(0)
				took := time.Since(exited)
				p.lastRestart.Store(int64(took))
				p.restarts.Add(1)
				p.log.Info().Int("pid", next.pid).Float64("start_ms", float64(next.startup.Microseconds())/1000).
					Float64("restart_ms", float64(took.Microseconds())/1000).Msg("plugin restarted")
				break
			}
			backoff = min(max(2*backoff, firstBackoff), maxBackoff)
			p.log.Error().Err(err).Dur("retry_in", backoff).Msg("restarting plugin failed")
		}
	}
}

// oneLine flattens multi-line errors (go-plugin's include the plugin's stderr) into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
