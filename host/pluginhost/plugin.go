// Package pluginhost launches and supervises the plugin processes of a pipeline (and provides the
// built-in stages through the same handle): handshake, type and version checks, configuration,
// restart with backoff after a crash, and stop.
package pluginhost

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
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
	// A plugin's exit is noticed from its connection: when the connection leaves READY (or a call
	// fails at the transport level) the supervisor checks every exitPoll, up to exitPollBurst
	// times, for go-plugin to report the exit; otherwise it checks only every exitPollQuiet, in
	// case a process exits without its connection showing it. Polling every exitPoll always cost
	// an idle router 50 wake-ups a second per plugin process.
	exitPoll       = 20 * time.Millisecond
	exitPollBurst  = 100 // 2 s of quick checks after a sign of trouble
	exitPollQuiet  = time.Second
	maxBackoff     = 10 * time.Second // the longest wait between restart attempts
	firstBackoff   = 100 * time.Millisecond
	healthyRunTime = time.Minute // a plugin that ran this long restarts without delay after a crash
	// hangAfter is how long a process may go on missing its call deadlines, without answering any
	// call in between, before it is taken for hung, killed and restarted like a crashed one.
	// Single misses are normal under load and only cost the cycle its fallback.
	hangAfter = 2 * time.Second
)

// Plugin is one stage implementation in service: an instance of a supervised plugin process
// (alone in it, or one of several in a multi-instance binary's process) or a built-in. Client
// returns the stage's client, or nil while a crashed process is being restarted.
type Plugin struct {
	spec Spec
	log  zerolog.Logger
	proc *process
	// instance is the plugin's name inside a multi-instance process; "" when it has the process
	// to itself (the default instance). Set before the plugin is handed out.
	instance string
	bound    atomic.Pointer[boundClient] // the last client bound to instance
	stopOnce sync.Once
}

// boundClient caches a plugin's client for one incarnation of its process.
type boundClient struct {
	inc    *incarnation
	client any
}

// Launch starts the plugin described by spec in a process of its own and, for a process,
// supervises it until Stop. Any problem (missing binary, checksum, handshake, type, stage,
// version, rejected parameters) is an error naming the plugin and the cause.
func Launch(ctx context.Context, spec Spec, log zerolog.Logger) (*Plugin, error) {
	p := newPlugin(spec, log)
	if _, err := launchProcess(ctx, p); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	return p, nil
}

func newPlugin(spec Spec, log zerolog.Logger) *Plugin {
	spec.StartTimeout = cmp.Or(spec.StartTimeout, 10*time.Second)
	return &Plugin{spec: spec, log: log.With().Str("plugin", spec.Name).Str("stage", spec.Stage.String()).Logger()}
}

// Name returns the plugin's configured name.
func (p *Plugin) Name() string { return p.spec.Name }

// Spec returns what the plugin was launched from.
func (p *Plugin) Spec() Spec { return p.spec }

// Client returns the stage client (transport.BatchFilter for a filter, and so on), or nil while the
// process is down.
func (p *Plugin) Client() any {
	if inc := p.proc.cur.Load(); inc != nil {
		return p.bind(inc)
	}
	return nil
}

// bind returns the plugin's client in incarnation inc: the process's own for the default
// instance, else one bound to the plugin's instance (made once per incarnation).
func (p *Plugin) bind(inc *incarnation) any {
	if p.instance == "" {
		return inc.stage
	}
	if b := p.bound.Load(); b != nil && b.inc == inc {
		return b.client
	}
	c := transport.Bind(inc.stage.(transport.Configurer), p.instance)
	p.bound.Store(&boundClient{inc: inc, client: c})
	return c
}

// Fusable returns a key shared by exactly the plugins that one call can reach together: instances
// of one multi-instance process. It is nil for every other plugin.
func (p *Plugin) Fusable() any {
	if p.instance == "" || !p.proc.multi() {
		return nil
	}
	return p.proc
}

// Instance returns the plugin's instance name in its multi-instance process ("" when it has the
// process to itself).
func (p *Plugin) Instance() string { return p.instance }

// Status describes the plugin as it runs now.
type Status struct {
	Name     string   `json:"name"`
	Info     sdk.Info `json:"info"`
	Builtin  bool     `json:"builtin"`
	Up       bool     `json:"up"`
	PID      int      `json:"pid,omitempty"`
	Protocol int      `json:"protocol,omitempty"`
	// Instance is the plugin's name inside a multi-instance process it shares with other
	// instances of its binary (PID is then theirs too); empty when it runs alone.
	Instance string `json:"instance,omitempty"`
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
	pr := p.proc
	s := Status{Name: p.spec.Name, Builtin: p.spec.inProcess(), Instance: p.instance, Restarts: pr.restarts.Load(),
		Hangs: pr.hangs.Load(), LastRestartMs: float64(pr.lastRestart.Load()/1000) / 1000}
	if info := pr.info.Load(); info != nil {
		s.Info = *info // while down: what the process reported when it last started
	}
	if inc := pr.cur.Load(); inc != nil {
		s.Up, s.PID, s.Protocol = true, inc.pid, inc.protocol
		s.StartMs = float64(inc.startup.Microseconds()) / 1000
	}
	return s
}

// CallFailed tells the supervisor that a call failed at the transport level, so a dead process is
// noticed at once rather than at the next poll.
func (p *Plugin) CallFailed() { p.proc.callFailed() }

// CallAnswered tells the supervisor that a call was answered in time, ending any streak of
// missed deadlines.
func (p *Plugin) CallAnswered() {
	if p.proc.missSince.Load() != 0 {
		p.proc.missSince.Store(0)
	}
}

// CallTimedOut tells the supervisor that a call missed its deadline. A process that has missed
// every deadline for hangAfter is killed; the supervisor then restarts it as after a crash.
func (p *Plugin) CallTimedOut() { p.proc.callTimedOut() }

// Stop takes the plugin out of service: it stops its process, or, in a process that other
// instances still share, drops it from there. It is safe to call more than once.
func (p *Plugin) Stop() { p.stopOnce.Do(func() { p.proc.detach(p) }) }

// checkInfo verifies that what the binary says it is matches the config.
func (p *Plugin) checkInfo(info sdk.Info) error {
	if info.Type != p.spec.Type {
		return fmt.Errorf("the binary reports type %q but the config declares %q", info.Type, p.spec.Type)
	}
	if info.Stage != p.spec.Stage {
		return fmt.Errorf("type %q serves the %v stage but the pipeline uses it as a %v", info.Type, info.Stage, p.spec.Stage)
	}
	if p.spec.Version == "" || p.spec.inProcess() {
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

// oneLine flattens multi-line errors (go-plugin's include the plugin's stderr) into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
