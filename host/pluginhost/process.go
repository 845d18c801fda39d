package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/builtin"
	"github.com/foresight-router/foresight/internal/deathsig"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// process is what serves one or more Plugins: a supervised plugin process, or an in-process
// implementation. A process whose binary reports sdk.Info.MultiInstance serves several configured
// instances of its type (the pool attaches them); every other process serves one.
type process struct {
	spec Spec // the first member's: what to run
	log  zerolog.Logger

	cur      atomic.Pointer[incarnation]
	info     atomic.Pointer[sdk.Info] // the last incarnation's, kept while the process is down
	restarts atomic.Int64
	hangs    atomic.Int64
	// missSince is when the current streak of missed deadlines began (UnixNano; 0: none).
	missSince atomic.Int64
	// lastRestart is how long the last restart took, from seeing the exit to serving again (ns).
	lastRestart atomic.Int64
	stopOnce    sync.Once
	stopped     atomic.Bool
	stop        chan struct{}
	done        chan struct{}
	nudge       chan struct{}

	// mu orders configuring members: an attach against a restart's configuring of every member.
	mu      sync.Mutex
	members []*Plugin
	// drops counts members being dropped from the running process; the last member's detach
	// waits for them before it stops the process, so a pipeline closing its plugins at once does
	// not kill the process under another member's drop.
	drops sync.WaitGroup
}

// incarnation is one run of a process.
type incarnation struct {
	client   *plugin.Client   // nil in process
	cmd      *exec.Cmd        // the process go-plugin started from it; nil in process
	conn     *grpc.ClientConn // the connection to the process; nil in process
	stage    any              // the process's stage client (transport.Configurer), or transport.Local
	info     sdk.Info
	pid      int
	protocol int
	startup  time.Duration
	started  time.Time
	// hung is set by the first hang detection that kills this incarnation, so that further missed
	// deadlines while the kill runs do not start another.
	hung     atomic.Bool
	killOnce sync.Once
}

// inProcess reports whether the process is an in-process implementation (built-in or Spec.Local).
func (s Spec) inProcess() bool { return s.Path == "" || s.Local != nil }

// launchProcess starts a process for first (its only member so far) and configures it. A binary
// that reports MultiInstance gets first as a named instance, so that others can join it.
func launchProcess(ctx context.Context, first *Plugin) (*process, error) {
	pr := &process{spec: first.spec, log: first.log, members: []*Plugin{first},
		stop: make(chan struct{}), done: make(chan struct{}), nudge: make(chan struct{}, 1)}
	first.proc = pr
	inc, err := pr.start(ctx)
	if err != nil {
		return nil, err
	}
	pr.cur.Store(inc)
	pr.info.Store(&inc.info)
	if inc.client == nil {
		close(pr.done)
	} else {
		go pr.supervise()
	}
	return pr, nil
}

// multi reports whether the process hosts several instances (as its binary last said).
func (pr *process) multi() bool {
	info := pr.info.Load()
	return info != nil && info.MultiInstance
}

// start runs a new incarnation and configures every member in it.
func (pr *process) start(ctx context.Context) (*incarnation, error) {
	ctx, cancel := context.WithTimeout(ctx, pr.spec.StartTimeout)
	defer cancel()
	began := time.Now()
	if pr.spec.inProcess() {
		return pr.startLocal(began)
	}
	log := newZlog(pr.log, hclog.Info)
	client, cmd, err := pr.newClient(log)
	if err != nil {
		return nil, err
	}
	inc, err := pr.connect(ctx, client, cmd)
	if err == nil {
		err = pr.configureAll(ctx, inc)
	}
	if err != nil {
		log.SetLevel(hclog.Off) // the error says it all; go-plugin's cleanup messages are noise
		killClient(client, cmd)
		return nil, err
	}
	inc.startup, inc.started = time.Since(began), time.Now()
	return inc, nil
}

// configureAll checks the binary against every member's spec and configures each: by instance
// name in a multi-instance binary, as the default instance otherwise (then there is one member).
func (pr *process) configureAll(ctx context.Context, inc *incarnation) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if !inc.info.MultiInstance && len(pr.members) > 1 {
		return fmt.Errorf("%d instances share this process but the binary no longer reports multi_instance", len(pr.members))
	}
	for _, m := range pr.members {
		if err := m.checkInfo(inc.info); err != nil {
			return err
		}
		if inc.info.MultiInstance && m.instance == "" {
			m.instance = instanceName(m.spec.Name)
		}
		if err := m.bind(inc).(transport.Configurer).Configure(ctx, m.spec.Params); err != nil {
			return fmt.Errorf("configuring %q: %s", m.spec.Name, oneLine(err))
		}
	}
	return nil
}

// instanceSeq numbers instances, so a plugin's new instance (a reload with other parameters)
// never takes the name of one still serving the pipeline it replaces.
var instanceSeq atomic.Int64

func instanceName(name string) string { return fmt.Sprintf("%s#%d", name, instanceSeq.Add(1)) }

// attach configures p as a further instance of the running process; the process must be
// multi-instance and up.
func (pr *process) attach(ctx context.Context, p *Plugin) error {
	ctx, cancel := context.WithTimeout(ctx, p.spec.StartTimeout)
	defer cancel()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	inc := pr.cur.Load()
	if inc == nil || pr.stopped.Load() {
		return errors.New("the process to share is not running")
	}
	if err := p.checkInfo(inc.info); err != nil {
		return err
	}
	p.proc, p.instance = pr, instanceName(p.spec.Name)
	if err := p.bind(inc).(transport.Configurer).Configure(ctx, p.spec.Params); err != nil {
		return fmt.Errorf("configuring: %s", oneLine(err))
	}
	pr.members = append(pr.members, p)
	return nil
}

// detach removes p from the process: the last member stops it, any other is dropped from it.
func (pr *process) detach(p *Plugin) {
	pr.mu.Lock()
	for i, m := range pr.members {
		if m == p {
			pr.members = append(pr.members[:i], pr.members[i+1:]...)
			break
		}
	}
	left := len(pr.members)
	inc := pr.cur.Load()
	drop := left > 0 && inc != nil && p.instance != ""
	if drop {
		pr.drops.Add(1)
	}
	pr.mu.Unlock()
	if left == 0 {
		pr.drops.Wait()
		pr.halt()
		return
	}
	if drop {
		defer pr.drops.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.bind(inc).(transport.Configurer).Drop(ctx); err != nil {
			p.log.Warn().Err(err).Msg("dropping the instance from its shared process failed; it stays configured there")
		}
	}
}

// halt stops supervision and the process; it is safe to call more than once.
func (pr *process) halt() {
	pr.stopOnce.Do(func() {
		pr.stopped.Store(true)
		close(pr.stop)
		<-pr.done
		if inc := pr.cur.Swap(nil); inc != nil {
			inc.kill()
		}
	})
}

// newClient prepares the plugin process: go-plugin's client and the command it will start.
func (pr *process) newClient(log hclog.Logger) (*plugin.Client, *exec.Cmd, error) {
	host.reapOnce.Do(func() { reapOrphans(pr.log) }) // before this host's first plugin process
	// Run the binary directly, never through a shell, or its exit would go unseen.
	cmd := exec.Command(pr.spec.Path, pr.spec.Args...)
	cmd.Env = append(append(os.Environ(), routerEnv+"="+routerID()), pr.spec.Env...)
	// SIGKILL when the host dies, however it dies. A plugin that still outlives its host (a host
	// that locked the starting goroutine, another OS) is killed by the next host's reapOrphans.
	deathsig.Arm(cmd)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: transport.HostPlugins(),
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env already holds it, before Env so that Env wins
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		GRPCDialOptions:  transport.DialOptions(),
		StartTimeout:     pr.spec.StartTimeout,
		Logger:           log,
	}
	if pr.spec.SHA256 != "" {
		sum, err := hex.DecodeString(pr.spec.SHA256)
		if err != nil {
			return nil, nil, fmt.Errorf("sha256 %q is not hex: %w", pr.spec.SHA256, err)
		}
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	return plugin.NewClient(cfg), cmd, nil
}

// connect handshakes, dispenses the stage and asks the binary what it is.
func (pr *process) connect(ctx context.Context, client *plugin.Client, cmd *exec.Cmd) (*incarnation, error) {
	rpc, err := client.Client()
	if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
		return nil, fmt.Errorf("starting %s: its SHA-256 is not the declared sha256 %s (the binary changed since it was pinned?)", pr.spec.Path, pr.spec.SHA256)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %s", pr.spec.Path, oneLine(err))
	}
	raw, err := rpc.Dispense(pr.spec.Stage.String())
	if err != nil {
		return nil, fmt.Errorf("dispensing the %v stage: %s", pr.spec.Stage, oneLine(err))
	}
	conf, ok := raw.(transport.Configurer)
	if !ok {
		return nil, fmt.Errorf("the %v client does not speak PluginService", pr.spec.Stage)
	}
	inc := &incarnation{client: client, cmd: cmd, stage: conf, protocol: client.NegotiatedVersion()}
	if g, ok := rpc.(*plugin.GRPCClient); ok {
		inc.conn = g.Conn
	}
	if rc := client.ReattachConfig(); rc != nil {
		inc.pid = rc.Pid
	}
	if inc.info, err = conf.Info(ctx); err != nil {
		return nil, fmt.Errorf("asking for its info: %s", oneLine(err))
	}
	return inc, nil
}

// startLocal configures an in-process implementation: spec.Local, else the built-in of spec.Type.
func (pr *process) startLocal(began time.Time) (*incarnation, error) {
	impl, stage := pr.spec.Local, pr.spec.Stage
	if impl == nil {
		var err error
		if impl, stage, err = builtin.New(pr.spec.Type); err != nil {
			return nil, err
		}
	}
	// An in-process picker places rounds as a plugin process's would (transport.Local.PickBatch).
	info := sdk.Info{Type: impl.Type(), Stage: stage, Version: "builtin", Description: impl.Description(), Rounds: stage == sdk.StagePicker}
	if r, ok := impl.(sdk.Reader); ok {
		info.Reads = r.Reads() // what the stage reads decides where some are called (flow control's detector)
	}
	if err := pr.members[0].checkInfo(info); err != nil {
		return nil, err
	}
	if err := impl.Configure(pr.spec.Params); err != nil {
		return nil, fmt.Errorf("configuring: %s", oneLine(err))
	}
	return &incarnation{stage: transport.Local{P: impl}, info: info, startup: time.Since(began), started: time.Now()}, nil
}

// watchConn calls trouble each time the connection to the process leaves READY, until the
// returned stop is called: a process that exits closes its end, so the supervisor hears of it
// without polling. In process, or without a connection, it watches nothing.
func (inc *incarnation) watchConn(trouble func()) (stop func()) {
	if inc.conn == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for s := inc.conn.GetState(); inc.conn.WaitForStateChange(ctx, s); {
			if s = inc.conn.GetState(); s != connectivity.Ready {
				trouble()
			}
		}
	}()
	return cancel
}

// callFailed tells the supervisor that a call failed at the transport level, so a dead process
// is noticed at once rather than at the next poll.
func (pr *process) callFailed() {
	select {
	case pr.nudge <- struct{}{}:
	default:
	}
}

// callTimedOut counts a missed deadline; a process that has missed every deadline for hangAfter
// is killed (SIGKILL within killGrace, whether or not it answers go-plugin's graceful close), and
// the supervisor then restarts it as after a crash. One kill runs per incarnation.
func (pr *process) callTimedOut() {
	now := time.Now().UnixNano()
	if pr.missSince.CompareAndSwap(0, now) {
		return
	}
	since := pr.missSince.Load()
	if since == 0 || time.Duration(now-since) < hangAfter || !pr.missSince.CompareAndSwap(since, 0) {
		return
	}
	inc := pr.cur.Load()
	if inc == nil || inc.client == nil || !inc.hung.CompareAndSwap(false, true) {
		return
	}
	pr.hangs.Add(1)
	pr.log.Error().Int("pid", inc.pid).Dur("missing_deadlines_for", time.Duration(now-since)).
		Msg("plugin hung: every call missed its deadline; killing it to restart it")
	go func() {
		inc.kill()
		pr.callFailed() // the process is gone now: restart it without waiting for the next poll
	}()
}

// supervise waits for the process to exit and restarts it with backoff until halted.
func (pr *process) supervise() {
	defer close(pr.done)
	timer := time.NewTimer(exitPollQuiet)
	defer timer.Stop()
	for {
		inc := pr.cur.Load()
		stopWatch := inc.watchConn(pr.callFailed)
		quick := 0 // checks left at exitPoll
		for !inc.client.Exited() {
			wait := exitPollQuiet
			if quick > 0 {
				wait = exitPoll
				quick--
			}
			timer.Reset(wait)
			select {
			case <-pr.stop:
				stopWatch()
				return
			case <-timer.C:
			case <-pr.nudge:
				quick = exitPollBurst
			}
		}
		stopWatch()
		pr.cur.Store(nil)
		exited := time.Now()
		inc.kill() // release the connection (a hang's kill may be under way: this waits for it)
		pr.log.Error().Dur("ran", time.Since(inc.started)).Int("pid", inc.pid).Msg("plugin process exited; restarting")
		var backoff time.Duration
		if time.Since(inc.started) < healthyRunTime {
			backoff = firstBackoff
		}
		for {
			select {
			case <-pr.stop:
				return
			case <-time.After(backoff):
			}
			next, err := pr.start(context.Background())
			if err == nil {
				pr.cur.Store(next)
				pr.info.Store(&next.info)
				pr.missSince.Store(0)
				took := time.Since(exited)
				pr.lastRestart.Store(int64(took))
				pr.restarts.Add(1)
				pr.log.Info().Int("pid", next.pid).Float64("start_ms", float64(next.startup.Microseconds())/1000).
					Float64("restart_ms", float64(took.Microseconds())/1000).Msg("plugin restarted")
				break
			}
			backoff = min(max(2*backoff, firstBackoff), maxBackoff)
			pr.log.Error().Err(err).Dur("retry_in", backoff).Msg("restarting plugin failed")
		}
	}
}
