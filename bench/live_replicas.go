package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/foresight-router/foresight/internal/freeport"
	"github.com/foresight-router/foresight/sim/emulator"
)

// liveRouters are the `foresight serve` processes of one config's run: one router, or
// LiveOptions.Replicas of them behind the client, which spreads the requests over them round
// robin as a gateway does. With StateNATS the replicas share a state plane whose NATS the first
// embeds; with StateNone each counts only its own requests.
type liveRouters struct {
	procs []*RouterProc
	files []string // the replicas' configs, removed by stop
}

// validateReplicas checks --replicas and --state.
func (o *LiveOptions) validateReplicas() error {
	switch {
	case o.Replicas < 0:
		return fmt.Errorf("--replicas must be at least 1, got %d", o.Replicas)
	case o.State != "" && o.State != StateNATS && o.State != StateNone:
		return fmt.Errorf("--state %q: accepted: nats, none", o.State)
	}
	return nil
}

// replicasText describes the routers of a config's run ("" for one).
func (o *LiveOptions) replicasText() string {
	switch {
	case o.Replicas <= 1:
		return ""
	case o.State == StateNone:
		return fmt.Sprintf("%d replicas, each counting its own requests", o.Replicas)
	default:
		return fmt.Sprintf("%d replicas sharing a state plane (NATS embedded in the first)", o.Replicas)
	}
}

// startRouters starts the routers of config over the fleet's addrs with args.
func (o *LiveOptions) startRouters(ctx context.Context, config string, addrs, args []string) (*liveRouters, error) {
	rs := &liveRouters{}
	if o.Replicas <= 1 {
		p, err := StartRouter(ctx, o.Binary, config, addrs, args, emulator.DefaultModel, o.ReadyTimeout)
		if err != nil {
			return nil, err
		}
		rs.procs = []*RouterProc{p}
		return rs, nil
	}
	files, err := o.replicaConfigs(config)
	rs.files = files
	if err != nil {
		rs.stop(0)
		return nil, err
	}
	for _, f := range files {
		p, err := StartRouter(ctx, o.Binary, f, addrs, args, emulator.DefaultModel, o.ReadyTimeout)
		if err != nil {
			rs.stop(time.Second)
			return nil, err
		}
		rs.procs = append(rs.procs, p)
	}
	return rs, nil
}

// replicaConfigs writes config's copies for the replicas beside it (its relative paths stay
// right), each with a state section when the replicas share one.
func (o *LiveOptions) replicaConfigs(config string) ([]string, error) {
	data, err := os.ReadFile(config)
	if err != nil {
		return nil, err
	}
	var nats string
	if o.State != StateNone {
		addrs, err := freeport.Addrs(1)
		if err != nil {
			return nil, err
		}
		nats = addrs[0]
	}
	var files []string
	for i := range o.Replicas {
		text := strings.TrimRight(string(data), "\n") + "\n"
		switch {
		case nats != "" && i == 0:
			text += fmt.Sprintf("state: {replica: replica-%d, nats: {embedded: {listen: %q}}}\n", i, nats)
		case nats != "":
			text += fmt.Sprintf("state: {replica: replica-%d, nats: {url: %q}}\n", i, "nats://"+nats)
		}
		f, err := os.CreateTemp(filepath.Dir(config), ".bench-live-replica-"+strconv.Itoa(i)+"-*.yaml")
		if err != nil {
			return files, err
		}
		files = append(files, f.Name())
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// targets are the routers' API bases, for the client to spread its requests over.
func (rs *liveRouters) targets() []string {
	var out []string
	for _, p := range rs.procs {
		out = append(out, "http://"+p.api)
	}
	return out
}

// pids are the routers' process ids.
func (rs *liveRouters) pids() []int {
	var out []int
	for _, p := range rs.procs {
		out = append(out, p.pid)
	}
	return out
}

// access is the routers' access lines, merged (a request is in one router's).
func (rs *liveRouters) access() *accessLog {
	if len(rs.procs) == 1 {
		return rs.procs[0].access
	}
	all := newAccessLog()
	for _, p := range rs.procs {
		p.access.mu.Lock()
		for id, l := range p.access.lines {
			all.lines[id] = l
		}
		p.access.mu.Unlock()
	}
	return all
}

// stop stops every router, then removes the replicas' configs.
func (rs *liveRouters) stop(grace time.Duration) {
	for _, p := range rs.procs {
		p.Stop(grace)
	}
	for _, f := range rs.files {
		_ = os.Remove(f)
	}
}
