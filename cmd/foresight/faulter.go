package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"

	"github.com/foresight-router/foresight/sim/loadgen"
	"gopkg.in/yaml.v3"
)

// faulter performs the faults, one at a time.
type faulter struct {
	adm       *adminClient
	file      string // the config copy the router serves
	valid     []byte // its valid content
	swap      config.PluginSpec
	target    string // the plugin the bad reloads break
	rng       *rand.Rand
	swaps     int
	restartMs []float64
}

func (f *faulter) perform(ctx context.Context, pf plannedFault) faultEvent {
	began := time.Now()
	var ev faultEvent
	switch pf.Kind {
	case faultSwap:
		ev = f.swapScorer(ctx)
	case faultKill:
		ev = f.kill(ctx)
	case faultBadReload:
		ev = f.badReload(ctx, pf.N)
	}
	ev.Kind = pf.Kind.String()
	ev.TookMs = ms(time.Since(began))
	return ev
}

// swapScorer serves the swapped slot with the latency scorer's other strategy.
func (f *faulter) swapScorer(ctx context.Context) faultEvent {
	strategy := []string{"most", "least"}[f.swaps%2]
	f.swaps++
	body, err := swapBody(f.swap, strategy)
	if err != nil {
		return faultEvent{Detail: err.Error()}
	}
	status, answer, err := f.adm.do(ctx, http.MethodPut, "/admin/stages/"+faultSwapSlot, body)
	switch {
	case err != nil:
		return faultEvent{Detail: "headroomSelectionStrategy " + strategy + ": " + err.Error()}
	case status != http.StatusOK:
		return faultEvent{Detail: fmt.Sprintf("headroomSelectionStrategy %s: status %d: %s", strategy, status, errorMessage(answer))}
	}
	var res admin.Result
	_ = json.Unmarshal(answer, &res)
	return faultEvent{OK: true, Detail: fmt.Sprintf("headroomSelectionStrategy %s: generation %d", strategy, res.Generation)}
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
func (f *faulter) kill(ctx context.Context) faultEvent {
	d, err := f.adm.pipeline(ctx)
	if err != nil {
		return faultEvent{Detail: err.Error()}
	}
	var alive []admin.Plugin
	for _, p := range d.Plugins {
		if p.PID > 0 && p.Up {
			alive = append(alive, p)
		}
	}
	if len(alive) == 0 {
		return faultEvent{Detail: "no plugin process is up"}
	}
	victim := alive[f.rng.IntN(len(alive))]
	proc, err := os.FindProcess(victim.PID)
	if err != nil {
		return faultEvent{Detail: fmt.Sprintf("%s (pid %d): %v", victim.Name, victim.PID, err)}
	}
	killed := time.Now()
	if err := proc.Kill(); err != nil {
		return faultEvent{Detail: fmt.Sprintf("killing %s (pid %d): %v", victim.Name, victim.PID, err)}
	}
	deadline := killed.Add(faultRestartTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(faultRestartPoll)
		d, err := f.adm.pipeline(ctx)
		if err != nil {
			continue // the next poll may answer; the deadline bounds the wait
		}
		for _, p := range d.Plugins {
			if p.Name != victim.Name || !p.Up || p.PID == 0 || p.PID == victim.PID {
				continue
			}
			measured := ms(time.Since(killed))
			restart := max(measured, p.LastRestartMs)
			f.restartMs = append(f.restartMs, restart)
			return faultEvent{OK: true, Detail: fmt.Sprintf("%s pid %d → %d: last_restart_ms %.1f, measured %.1f ms, restarts %d",
				victim.Name, victim.PID, p.PID, p.LastRestartMs, measured, p.Restarts)}
		}
	}
	return faultEvent{Detail: fmt.Sprintf("%s (pid %d) did not serve again with a new pid within %v", victim.Name, victim.PID, faultRestartTimeout)}
}

// The kinds of invalid config the bad reloads write, in turn.
var badConfigKinds = []string{"broken-yaml", "missing-binary", "unknown-parameter"}

// badReload writes the n-th kind of invalid config, asks for a reload, which must answer 422 and
// leave the generation unchanged, then restores the valid config and lets the router's file
// watcher settle.
func (f *faulter) badReload(ctx context.Context, n int) faultEvent {
	kind := badConfigKinds[n%len(badConfigKinds)]
	data, err := badConfig(f.valid, f.target, kind)
	if err != nil {
		return faultEvent{Detail: kind + ": " + err.Error()}
	}
	before, err := f.adm.pipeline(ctx)
	if err != nil {
		return faultEvent{Detail: kind + ": " + err.Error()}
	}
	if err := writeAtomically(f.file, data); err != nil {
		return faultEvent{Detail: kind + ": " + err.Error()}
	}
	status, answer, reqErr := f.adm.do(ctx, http.MethodPost, "/admin/reload", nil)
	after, genErr := f.adm.pipeline(ctx)
	restoreErr := writeAtomically(f.file, f.valid)
	sleepUntil(ctx, time.Now().Add(faultSettle))
	switch {
	case restoreErr != nil:
		return faultEvent{Detail: kind + ": restoring the valid config: " + restoreErr.Error()}
	case reqErr != nil:
		return faultEvent{Detail: kind + ": " + reqErr.Error()}
	case status != http.StatusUnprocessableEntity:
		return faultEvent{Detail: fmt.Sprintf("%s: status %d, want 422: %s", kind, status, errorMessage(answer))}
	case genErr != nil:
		return faultEvent{Detail: kind + ": " + genErr.Error()}
	case after.Generation != before.Generation:
		return faultEvent{Detail: fmt.Sprintf("%s: answered 422 but the generation went from %d to %d", kind, before.Generation, after.Generation)}
	}
	return faultEvent{OK: true, Detail: fmt.Sprintf("%s: 422 at generation %d: %s", kind, after.Generation, clip(errorMessage(answer), 200))}
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

// adminClient calls the router's admin API.
type adminClient struct {
	base, token string
	c           *http.Client
}

// do sends a request and returns the status and the body of the answer.
func (a *adminClient) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %s", method, path, transportError(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, answer, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return resp.StatusCode, answer, nil
}

// pipeline returns GET /admin/pipeline's description.
func (a *adminClient) pipeline(ctx context.Context) (admin.Description, error) {
	var d admin.Description
	status, body, err := a.do(ctx, http.MethodGet, "/admin/pipeline", nil)
	if err != nil {
		return d, err
	}
	if status != http.StatusOK {
		return d, fmt.Errorf("GET /admin/pipeline: status %d: %s", status, errorMessage(body))
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Errorf("GET /admin/pipeline: %w", err)
	}
	return d, nil
}

// writeAtomically replaces file with data through a rename, so that the router's file watcher
// never reads it half written.
func writeAtomically(file string, data []byte) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// errorMessage returns an OpenAI error body's message, else the body's start.
func errorMessage(body []byte) string { return clip(loadgen.ErrorText(body), 200) }

// transportError returns err without the method and URL an *url.Error repeats.
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return clip(err.Error(), 200)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
