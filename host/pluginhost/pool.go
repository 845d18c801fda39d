package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/rs/zerolog"
)

// Pool shares running plugins between the pipelines of successive reloads. A plugin is kept, not
// restarted, when a new pipeline asks for one with the same fingerprint: the same name, type,
// stage, binary (by the checksum of its contents, so a rebuilt binary at the same path is a new
// plugin), arguments, environment, version constraint, start timeout and parameters. That is how
// the producer keeps its learned model when only a scorer changes. Plugins are counted by
// reference and stopped when the last pipeline using them releases them.
//
// Plugins that differ only in name, parameters or version constraint share a process when their
// binary hosts several instances (sdk.Info.MultiInstance): one process of the affinity filter
// serves both a strict and a loose instance. Each is its own Plugin, configured, swapped and
// released on its own; the process stops with its last instance.
//
// Specs with a Local implementation are never shared: each Acquire launches its own.
type Pool struct {
	mu      sync.Mutex
	entries map[string]*pooled // by fingerprint
	owners  map[*Plugin]*pooled
	procs   map[string]*shared // by process key: a multi-instance process, or its launch under way
}

// shared is a process that further instances may join. ready is closed once the launch of its
// first instance ended; proc is then the process if it hosts several instances, else nil.
type shared struct {
	ready chan struct{}
	proc  *process
}

type pooled struct {
	key  string
	p    *Plugin
	refs int
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{entries: map[string]*pooled{}, owners: map[*Plugin]*pooled{}, procs: map[string]*shared{}}
}

// Acquire returns a running plugin for spec: the pool's own when one with the same fingerprint
// runs (reused is then true), else a newly launched one. Each Acquire must be matched by one
// Release.
func (pl *Pool) Acquire(ctx context.Context, spec Spec, log zerolog.Logger) (p *Plugin, reused bool, err error) {
	key, err := Fingerprint(spec)
	if err != nil {
		return nil, false, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	if spec.Local == nil {
		pl.mu.Lock()
		if e := pl.entries[key]; e != nil {
			e.refs++
			pl.mu.Unlock()
			return e.p, true, nil
		}
		pl.mu.Unlock()
	}
	if p, err = pl.start(ctx, spec, log); err != nil {
		return nil, false, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	e := &pooled{key: key, p: p, refs: 1}
	if spec.Local == nil {
		if other := pl.entries[key]; other != nil { // launched concurrently for the same spec
			other.refs++
			go p.Stop()
			return other.p, true, nil
		}
		pl.entries[key] = e
	}
	pl.owners[p] = e
	return p, false, nil
}

// start runs spec as an instance of a running multi-instance process of the same binary, or else
// in a process of its own. Launches of one binary wait for each other, so that the second finds
// out from the first whether it may share.
func (pl *Pool) start(ctx context.Context, spec Spec, log zerolog.Logger) (*Plugin, error) {
	p := newPlugin(spec, log)
	if spec.inProcess() {
		_, err := launchProcess(ctx, p)
		return p, err
	}
	key, err := processKey(spec)
	if err != nil {
		return nil, err
	}
	for {
		pl.mu.Lock()
		sh := pl.procs[key]
		if sh == nil { // the first of its binary: launch, and let others join if it can host them
			sh = &shared{ready: make(chan struct{})}
			pl.procs[key] = sh
			pl.mu.Unlock()
			pr, err := launchProcess(ctx, p)
			pl.mu.Lock()
			if err == nil && pr.multi() {
				sh.proc = pr
			} else {
				delete(pl.procs, key)
			}
			pl.mu.Unlock()
			close(sh.ready)
			return p, err
		}
		pl.mu.Unlock()
		select {
		case <-sh.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if sh.proc == nil { // the first launch failed or hosts one instance: launch alone
			_, err := launchProcess(ctx, p)
			return p, err
		}
		err := sh.proc.attach(ctx, p)
		switch {
		case err == nil:
			return p, nil
		case sh.proc.stopped.Load(): // its last instance left meanwhile: start over
			pl.forget(key, sh)
			continue
		}
		// Restarting, or refusing p's parameters: run alone, which says the same about bad ones.
		_, err = launchProcess(ctx, p)
		return p, err
	}
}

// forget removes sh from the shareable processes if it is still there.
func (pl *Pool) forget(key string, sh *shared) {
	pl.mu.Lock()
	if pl.procs[key] == sh {
		delete(pl.procs, key)
	}
	pl.mu.Unlock()
}

// Release drops one reference to p, stopping it when none is left. Releasing a plugin the pool
// did not hand out stops it (a pipeline built without a pool owns its plugins).
func (pl *Pool) Release(p *Plugin) {
	pl.mu.Lock()
	e := pl.owners[p]
	if e != nil {
		e.refs--
		if e.refs > 0 {
			pl.mu.Unlock()
			return
		}
		delete(pl.owners, p)
		if pl.entries[e.key] == e {
			delete(pl.entries, e.key)
		}
	}
	pl.mu.Unlock()
	p.Stop()
	if p.proc.stopped.Load() { // its last instance: no one may join it any more
		pl.mu.Lock()
		for key, sh := range pl.procs {
			if sh.proc == p.proc {
				delete(pl.procs, key)
			}
		}
		pl.mu.Unlock()
	}
}

// Len returns how many distinct plugins the pool holds.
func (pl *Pool) Len() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return len(pl.owners)
}

// Fingerprint identifies what a spec would run: two specs with the same fingerprint run the same
// binary with the same configuration. It reads the binary to checksum it. A sha256 pin the binary
// satisfies changes nothing that runs, so a pinned spec and an unpinned one of the same binary
// have one fingerprint (a swap through the admin API, pinned, may then join the process an
// unpinned plugin of the file runs in); a pin it does not satisfy keeps its own, whose launch
// fails on the checksum.
func Fingerprint(spec Spec) (string, error) {
	var binary string
	if spec.Path != "" && spec.Local == nil {
		sum, err := fileSHA256(spec.Path)
		if err != nil {
			return "", err
		}
		binary = sum
		if strings.EqualFold(spec.SHA256, sum) {
			spec.SHA256 = ""
		}
	}
	data, err := json.Marshal(struct {
		Name, Type, Stage, Path, Binary, SHA256, Version string
		Args, Env                                        []string
		Params                                           json.RawMessage
		StartTimeout                                     int64
	}{spec.Name, spec.Type, spec.Stage.String(), spec.Path, binary, spec.SHA256, spec.Version,
		spec.Args, spec.Env, canonicalJSON(spec.Params), int64(spec.StartTimeout)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// processKey identifies the process a spec runs: its binary (by path and contents), arguments,
// environment, checksum constraint, start timeout, type and stage, but not its name, parameters or
// version constraint, which are per instance.
func processKey(spec Spec) (string, error) {
	instanceless := spec
	instanceless.Name, instanceless.Params, instanceless.Version = "", nil, ""
	return Fingerprint(instanceless)
}

// canonicalJSON re-encodes a JSON document so that key order and spacing do not matter (objects'
// keys come out sorted); anything that does not decode is kept as it is.
func canonicalJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// sums caches binaries' checksums by path and file identity. Hashing the ~20 MB binaries of a
// pipeline on every reload cost ~0.5 s of CPU on the serving machine (bench faults: the p99 TTFT
// doubled around every swap); a binary that is rebuilt or replaced changes its size, modification
// time or inode, and is hashed again.
var sums struct {
	sync.Mutex
	m map[string]fileSum
}

type fileSum struct {
	size, mtime int64
	ino, dev    uint64
	sum         string
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("reading the binary: %w", err)
	}
	id := fileSum{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.ino, id.dev = sys.Ino, uint64(sys.Dev)
	}
	sums.Lock()
	cached, ok := sums.m[path]
	sums.Unlock()
	if ok && cached.size == id.size && cached.mtime == id.mtime && cached.ino == id.ino && cached.dev == id.dev {
		return cached.sum, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the binary: %w", err)
	}
	id.sum = hex.EncodeToString(h.Sum(nil))
	sums.Lock()
	if sums.m == nil {
		sums.m = map[string]fileSum{}
	}
	sums.m[path] = id
	sums.Unlock()
	return id.sum, nil
}
