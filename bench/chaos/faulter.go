package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"syscall"
	"time"

	"github.com/foresight-router/foresight/bench/openloop"
	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/procstat"
	"gopkg.in/yaml.v3"
)

// Faulter performs faults on the router its Admin reaches, one at a time. Set its exported
// fields, then call Run.
type Faulter struct {
	// Admin is the router's admin API.
	Admin *Admin
	// Swap is the plugin serving SwapSlot, which the swaps serve alternately with its
	// headroomSelectionStrategy "most" and "least" (see Targets).
	Swap config.PluginSpec
	// File is the config file the router serves, which the bad reloads overwrite; Valid its
	// valid content, which they restore; Target the plugin they break (see Targets). Only bad
	// reloads need them.
	File   string
	Valid  []byte
	Target string
	// Rand picks the plugin each kill kills.
	Rand *rand.Rand

	swaps     int
	restartMs []float64
	recoverMs []float64
}

// RestartMs returns every kill's restart time so far, in order: per kill the larger of the
// plugin's last_restart_ms and the faulter's own kill-to-serving time.
func (f *Faulter) RestartMs() []float64 { return f.restartMs }

// RecoverMs returns, for every stop so far, the time from the SIGSTOP until the plugin served
// again with a new pid: the router's hang detection, its kill and the restart.
func (f *Faulter) RecoverMs() []float64 { return f.recoverMs }

// perform does the planned fault and says how it went (Event.AtMs left 0).
func (f *Faulter) perform(ctx context.Context, pf Planned) Event {
	began := time.Now()
	var ev Event
	switch pf.Kind {
	case KindSwap:
		ev = f.swapScorer(ctx)
	case KindKill:
		ev = f.kill(ctx)
	case KindBadReload:
		ev = f.badReload(ctx, pf.N)
	case KindStop:
		ev = f.stop(ctx)
	}
	ev.Kind = pf.Kind.String()
	ev.TookMs = ms(time.Since(began))
	return ev
}

// swapScorer serves the swapped slot with the latency scorer's other strategy.
func (f *Faulter) swapScorer(ctx context.Context) Event {
	strategy := []string{"most", "least"}[f.swaps%2]
	f.swaps++
	body, err := swapBody(f.Swap, strategy)
	if err != nil {
		return Event{Detail: err.Error()}
	}
	status, answer, err := f.Admin.Do(ctx, http.MethodPut, "/admin/stages/"+SwapSlot, body)
	switch {
	case err != nil:
		return Event{Detail: "headroomSelectionStrategy " + strategy + ": " + err.Error()}
	case status != http.StatusOK:
		return Event{Detail: fmt.Sprintf("headroomSelectionStrategy %s: status %d: %s", strategy, status, openloop.ErrorMessage(answer))}
	}
	var res admin.Result
	_ = json.Unmarshal(answer, &res)
	return Event{OK: true, Detail: fmt.Sprintf("headroomSelectionStrategy %s: generation %d", strategy, res.Generation)}
}

// swapBody is PUT /admin/stages' body serving spec with the given headroomSelectionStrategy.
func swapBody(spec config.PluginSpec, strategy string) ([]byte, error) {
	params := maps.Clone(spec.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	params["headroomSelectionStrategy"] = strategy
	body := map[string]any{"type": spec.Type, "path": spec.Path, "parameters": params}
	if spec.Version != "" {
		body["version"] = spec.Version
	}
	if spec.SHA256 != "" {
		body["sha256"] = spec.SHA256
	}
	if len(spec.Args) > 0 {
		body["args"] = spec.Args
	}
	if len(spec.Env) > 0 {
		body["env"] = spec.Env
	}
	if spec.Timeout > 0 {
		body["timeout"] = spec.Timeout.String()
	}
	return json.Marshal(body)
}

// kill SIGKILLs a random plugin process and waits until the plugin serves again with a new pid.
func (f *Faulter) kill(ctx context.Context) Event {
	return f.signal(ctx, syscall.SIGKILL)
}

// stop SIGSTOPs a random plugin process — frozen, its socket open, answering nothing — and waits
// until the router has taken it for hung, killed it and served the plugin again with a new pid.
// A stopped process the router left behind is killed here, so that nothing stays frozen, and
// fails the fault.
func (f *Faulter) stop(ctx context.Context) Event {
	return f.signal(ctx, syscall.SIGSTOP)
}

// signal sends sig to a random plugin process that is up and waits until the plugin serves again
// with a new pid, the old process gone.
func (f *Faulter) signal(ctx context.Context, sig syscall.Signal) Event {
	d, err := f.Admin.Pipeline(ctx)
	if err != nil {
		return Event{Detail: err.Error()}
	}
	var alive []admin.Plugin
	for _, p := range d.Plugins {
		if p.PID > 0 && p.Up {
			alive = append(alive, p)
		}
	}
	if len(alive) == 0 {
		return Event{Detail: "no plugin process is up"}
	}
	victim := alive[f.Rand.IntN(len(alive))]
	sent := time.Now()
	if err := syscall.Kill(victim.PID, sig); err != nil {
		return Event{Detail: fmt.Sprintf("sending %v to %s (pid %d): %v", sig, victim.Name, victim.PID, err)}
	}
	ev, took := f.awaitRestart(ctx, victim, sent)
	if ev.OK {
		if sig == syscall.SIGSTOP {
			f.recoverMs = append(f.recoverMs, took)
		} else {
			f.restartMs = append(f.restartMs, took)
		}
	}
	if ev.OK && procstat.Running(victim.PID) {
		ev = Event{Detail: fmt.Sprintf("%s served again but its old process (pid %d) is still there", victim.Name, victim.PID)}
	}
	if sig == syscall.SIGSTOP && procstat.Running(victim.PID) {
		_ = syscall.Kill(victim.PID, syscall.SIGKILL) // never leave a frozen process behind
	}
	return ev
}

// awaitRestart waits until victim serves again with a new pid, restartTimeout after sent at most,
// and returns the larger of the plugin's last_restart_ms and the time since sent.
func (f *Faulter) awaitRestart(ctx context.Context, victim admin.Plugin, sent time.Time) (Event, float64) {
	deadline := sent.Add(restartTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(restartPoll)
		d, err := f.Admin.Pipeline(ctx)
		if err != nil {
			continue // the next poll may answer; the deadline bounds the wait
		}
		for _, p := range d.Plugins {
			if p.Name != victim.Name || !p.Up || p.PID == 0 || p.PID == victim.PID {
				continue
			}
			measured := ms(time.Since(sent))
			return Event{OK: true, Detail: fmt.Sprintf("%s pid %d → %d: last_restart_ms %.1f, measured %.1f ms, restarts %d, hangs %d",
				victim.Name, victim.PID, p.PID, p.LastRestartMs, measured, p.Restarts, p.Hangs)}, max(measured, p.LastRestartMs)
		}
	}
	return Event{Detail: fmt.Sprintf("%s (pid %d) did not serve again with a new pid within %v", victim.Name, victim.PID, restartTimeout)}, 0
}

// The kinds of invalid config the bad reloads write, in turn.
var badConfigKinds = []string{"broken-yaml", "missing-binary", "unknown-parameter"}

// badReload writes the n-th kind of invalid config, asks for a reload, which must answer 422 and
// leave the generation unchanged, then restores the valid config and lets the router's file
// watcher settle.
func (f *Faulter) badReload(ctx context.Context, n int) Event {
	kind := badConfigKinds[n%len(badConfigKinds)]
	data, err := badConfig(f.Valid, f.Target, kind)
	if err != nil {
		return Event{Detail: kind + ": " + err.Error()}
	}
	before, err := f.Admin.Pipeline(ctx)
	if err != nil {
		return Event{Detail: kind + ": " + err.Error()}
	}
	if err := WriteAtomically(f.File, data); err != nil {
		return Event{Detail: kind + ": " + err.Error()}
	}
	status, answer, reqErr := f.Admin.Do(ctx, http.MethodPost, "/admin/reload", nil)
	after, genErr := f.Admin.Pipeline(ctx)
	restoreErr := WriteAtomically(f.File, f.Valid)
	openloop.SleepUntil(ctx, time.Now().Add(settle))
	switch {
	case restoreErr != nil:
		return Event{Detail: kind + ": restoring the valid config: " + restoreErr.Error()}
	case reqErr != nil:
		return Event{Detail: kind + ": " + reqErr.Error()}
	case status != http.StatusUnprocessableEntity:
		return Event{Detail: fmt.Sprintf("%s: status %d, want 422: %s", kind, status, openloop.ErrorMessage(answer))}
	case genErr != nil:
		return Event{Detail: kind + ": " + genErr.Error()}
	case after.Generation != before.Generation:
		return Event{Detail: fmt.Sprintf("%s: answered 422 but the generation went from %d to %d", kind, before.Generation, after.Generation)}
	}
	return Event{OK: true, Detail: fmt.Sprintf("%s: 422 at generation %d: %s", kind, after.Generation, openloop.Clip(openloop.ErrorMessage(answer), 200))}
}

// badConfig returns valid made invalid in the way kind names: broken YAML; plugin's path pointing
// at no file; or an unknown parameter added to plugin, which its Configure rejects.
func badConfig(valid []byte, plugin, kind string) ([]byte, error) {
	if kind == "broken-yaml" {
		return []byte("# written by foresight bench faults: not YAML\nplugins: [{name: broken\npipeline: {\n"), nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(valid, &doc); err != nil {
		return nil, err
	}
	spec := pluginNode(&doc, plugin)
	if spec == nil {
		return nil, fmt.Errorf("the config declares no plugin %q", plugin)
	}
	switch kind {
	case "missing-binary":
		setKey(spec, "path", &yaml.Node{Kind: yaml.ScalarNode, Value: "./.faultbench-no-such-plugin"})
	case "unknown-parameter":
		params := mapValue(spec, "parameters")
		if params == nil || params.Kind != yaml.MappingNode {
			params = &yaml.Node{Kind: yaml.MappingNode}
			setKey(spec, "parameters", params)
		}
		setKey(params, "faultbenchNoSuchParameter", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "1"})
	default:
		return nil, fmt.Errorf("no bad config kind %q", kind)
	}
	return yaml.Marshal(&doc)
}

// pluginNode returns the mapping of the plugin called name in the document's plugins list.
func pluginNode(doc *yaml.Node, name string) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	list := mapValue(doc.Content[0], "plugins")
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	for _, p := range list.Content {
		if n := mapValue(p, "name"); n != nil && n.Value == name {
			return p
		}
	}
	return nil
}

// mapValue returns the value of key in mapping m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets key in mapping m to v, adding it when absent.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}
