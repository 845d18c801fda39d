package config_test

import (
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fuzzSeeds are configurations beyond the examples: every section, and values at and past the
// bounds validation checks.
var fuzzSeeds = []string{
	y("plugins:", "  - name: q", "    type: queue-scorer", "pipeline:", "  scorers:", "    - pluginRef: q"),
	y("plugins:", "  - name: q", "    type: queue-scorer", "    timeout: 5ms", "    parameters:", "      source: inflight",
		"      nested: {a: [1, 2.5, true, null]}",
		"pipeline:", "  scorers:", "    - pluginRef: q", "      weight: 2.5",
		"  stageTimeout: 10ms", "  maxBatch: 1024", "  maxCohorts: 64"),
	y("server:", "  listen: 0.0.0.0:8000", "  adminListen: '[::1]:9090'", "  adminToken: secret", "  maxBodyBytes: 1024",
		"  upstreamTimeout: 1m", "  connectTimeout: 500ms", "  decisions: 10", "  prefixIndexBlocks: 100",
		"  decisionConcurrency: 1", "  streamFlushInterval: 20ms",
		"endpoints:", "  static:", "    - address: localhost:8001", "    - id: b", "      address: http://10.0.0.2:8000",
		"      labels: {role: decode}", "  file: endpoints.yaml",
		"scrape:", "  interval: 1ms", "  engine: sglang", "  metrics:", "    waiting: w", "    running: r",
		"objectives:", "  - name: interactive", "    priority: 10", "  - name: batch", "    priority: -1"),
	y("plugins:", "  - name: a", "    type: latency-scorer", "  - name: b", "    type: latency-scorer", "  - name: s", "    type: latency-scorer",
		"pipeline:", "  scorers:", "    - arms:", "        - pluginRef: a", "        - pluginRef: b", "          name: arm-b", "          weight: 3",
		"      shadow:", "        pluginRef: s"),
	y("pipeline:", "  maxBatch: 0", "  maxCohorts: -1", "  stageTimeout: -1s"),
	y("server:", "  upstreamTimeout: -1ns", "  decisionConcurrency: -1"),
	y("scrape:", "  interval: 999us"),
	y("endpoints:", "  static:", "    - address: a:1", "    - id: a:1", "      address: b:2"),
	y("objectives:", "  - name: x", "  - name: x"),
	y("endpoints:", "  static: [{address: a:1}]", "  kubernetes:", "    namespace: llm", "    selector: {app: vllm}", "    targetPort: http",
		"    kubeconfig: kube.yaml"),
	y("endpoints:", "  kubernetes: {inferencePool: llama, targetPort: 0x1f40, selector: {a: b}}"),
	y("endpoints:", "  kubernetes: {selector: {app: vllm}, targetPort: &p 8000}", "  file: x.yaml", "extra: *p"),
	y("plugins:", "  - name: Bad_Name", "    type: queue-scorer"),
	y("plugins:", "  - name: q", "    type: queue-scorer", "    sha256: 00", "pipeline:", "  scorers:", "    - pluginRef: q"),
	y("plugins:", "  - name: q", "    type: queue-scorer", "    path: ./missing", "    sha256: "+strings.Repeat("ab", 32),
		"    version: '>=1.0.0'", "    env: {GOMAXPROCS: '2'}", "    args: [x]"),
	y("pipeline:", "  scorers:", "    - pluginRef: q", "      weight: .nan"),
	y("unknown: 1"),
	y("plugins: {}"),
	"{}", "~", "", "# only a comment\n", "---\n---\n", "plugins:\n  - name: [\n", "\t", "a: &x 1\nb: *x\n",
}

var errorLine = regexp.MustCompile(`^[^\n]*?:(\d+): `)

// FuzzParse parses arbitrary YAML, seeded with the examples (as they are, and with their plugins
// made built-in) and fuzzSeeds, and checks what Parse promises. On error: the message names the
// file first, and a line it names is a line (>= 1). On success, the same config every time, and
// one that validation accepts: defaults applied (stage timeout positive, batch in [1, 1024],
// cohorts in [1, 64], listeners host:port, positive body limit, timeouts, decisions and prefix
// blocks, non-negative decision concurrency and flush interval, scrape interval >= 1ms, engine
// vllm or sglang); endpoints with valid addresses and unique non-empty ids (the address when
// unset); objectives uniquely and non-emptily named; plugins uniquely named, lower-case kebab
// names and types, non-negative timeouts, checksums of 64 hex digits, binaries' options only with
// a path, each serving exactly one stage of the pipeline; every slot's plugins declared, weights
// in [0, 1e6] and only on scorers, arms at least two, uniquely and validly named, of positive
// total weight, a shadow distinct from the slot's plugins, and at most one experiment; and
// ValidateRouter, which Parse ran, still accepts it.
func FuzzParse(f *testing.F) {
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		f.Fatalf("no examples: %v", err)
	}
	binaryOnly := regexp.MustCompile(`(?m)^\s+(path|version|sha256):.*\n`)
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(binaryOnly.ReplaceAll(data, nil))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	// Relative plugin paths resolve against a directory that holds nothing.
	file := filepath.Join(f.TempDir(), "foresight.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(file, data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, file+":") {
				t.Fatalf("%q: error %q does not start with the file", data, msg)
			}
			if m := errorLine.FindStringSubmatch(strings.TrimPrefix(msg, file)); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < 1 {
					t.Fatalf("%q: error %q names line %d", data, msg, n)
				}
			}
			return
		}
		if c.File() != file {
			t.Fatalf("File() = %q, want %q", c.File(), file)
		}
		again, err := config.Parse(file, data)
		if err != nil {
			t.Fatalf("%q parsed, then failed: %v", data, err)
		}
		if diff := cmp.Diff(c, again, cmpopts.IgnoreUnexported(config.Config{}), cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("%q parsed differently the second time (-first +second):\n%s", data, diff)
		}
		if err := c.ValidateRouter(); err != nil {
			t.Fatalf("%q: Parse accepted a config that ValidateRouter refuses: %v", data, err)
		}
		checkValid(t, string(data), c)
	})
}

var kebab = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// checkValid checks a parsed config against what validation documents.
func checkValid(t *testing.T, data string, c *config.Config) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%q: "+format, append([]any{data}, args...)...)
	}
	pl, s := c.Pipeline, c.Server
	if pl.StageTimeout <= 0 || pl.MaxBatch < 1 || pl.MaxBatch > 1024 || pl.MaxCohorts < 1 || pl.MaxCohorts > 64 {
		fail("pipeline settings %v, %d, %d", pl.StageTimeout, pl.MaxBatch, pl.MaxCohorts)
	}
	for _, addr := range []string{s.Listen, s.AdminListen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			fail("listener %q: %v", addr, err)
		}
	}
	if s.MaxBodyBytes <= 0 || s.UpstreamTimeout <= 0 || s.ConnectTimeout <= 0 || s.Decisions <= 0 || s.PrefixIndexBlocks <= 0 ||
		s.DecisionConcurrency < 0 || s.StreamFlushInterval < 0 {
		fail("server %+v", s)
	}
	if c.Scrape.Interval < time.Millisecond || c.Scrape.Engine != "vllm" && c.Scrape.Engine != "sglang" {
		fail("scrape %+v", c.Scrape)
	}
	ids := map[string]bool{}
	for _, e := range c.Endpoints.Static {
		if e.ID == "" || ids[e.ID] || endpoints.ValidateAddress(e.Address) != nil {
			fail("endpoint %+v", e)
		}
		ids[e.ID] = true
	}
	if k := c.Endpoints.Kubernetes; k != nil {
		pool, sel, port := k.InferencePool != "", len(k.Selector) > 0, k.TargetPort
		if pool == sel || c.Endpoints.File != "" || (pool && !port.IsZero()) ||
			(sel && (port.IsZero() || (port.Name == "" && (port.Number < 1 || port.Number > 65535)))) {
			fail("endpoints.kubernetes %+v with file %q", *k, c.Endpoints.File)
		}
	}
	objectives := map[string]bool{}
	for _, o := range c.Objectives {
		if p, ok := c.Priority(o.Name); o.Name == "" || objectives[o.Name] || !ok || p != o.Priority {
			fail("objective %+v", o)
		}
		objectives[o.Name] = true
	}
	names := map[string]bool{}
	for i := range c.Plugins {
		p := &c.Plugins[i]
		if !kebab.MatchString(p.Name) || !kebab.MatchString(p.Type) || names[p.Name] || p.Timeout < 0 {
			fail("plugin %+v", *p)
		}
		names[p.Name] = true
		if b, err := hex.DecodeString(p.SHA256); p.SHA256 != "" && (err != nil || len(b) != 32) {
			fail("plugin %q sha256 %q", p.Name, p.SHA256)
		}
		if p.Builtin() && (p.SHA256 != "" || p.Version != "" || len(p.Args) > 0 || len(p.Env) > 0) {
			fail("built-in plugin %q with a binary's options", p.Name)
		}
		if c.StageOf(p.Name) == sdk.StageUnspecified {
			fail("plugin %q serves no stage", p.Name)
		}
	}
	type slot struct {
		ref   *config.StageRef
		stage sdk.Stage
	}
	var slots []slot
	if pl.Producer != nil {
		slots = append(slots, slot{pl.Producer, sdk.StageProducer})
	}
	for i := range pl.Filters {
		slots = append(slots, slot{&pl.Filters[i], sdk.StageFilter})
	}
	for i := range pl.Scorers {
		slots = append(slots, slot{&pl.Scorers[i], sdk.StageScorer})
	}
	if pl.Admitter != nil {
		slots = append(slots, slot{pl.Admitter, sdk.StageAdmitter})
	}
	if pl.Picker != nil {
		slots = append(slots, slot{pl.Picker, sdk.StagePicker})
	}
	experiments := 0
	for _, sl := range slots {
		r := sl.ref
		refs := r.Primaries()
		if r.Shadow != nil {
			refs = append(refs, r.Shadow.PluginRef)
		}
		for _, name := range refs {
			if c.Plugin(name) == nil || c.StageOf(name) != sl.stage {
				fail("slot %+v: plugin %q undeclared or serving another stage", *r, name)
			}
		}
		if w := r.WeightOr1(); r.Weight != nil && sl.stage != sdk.StageScorer || !(w >= 0 && w <= 1e6) {
			fail("slot %+v: weight %v", *r, w)
		}
		if !r.Experimental() {
			continue
		}
		experiments++
		if len(r.Arms) > 0 {
			armNames, total := map[string]bool{}, 0.0
			for _, a := range r.Arms {
				if !kebab.MatchString(a.ArmName()) || armNames[a.ArmName()] || !(a.ArmWeight() >= 0 && a.ArmWeight() <= 1e6) {
					fail("arm %+v", a)
				}
				armNames[a.ArmName()] = true
				total += a.ArmWeight()
			}
			if len(r.Arms) < 2 || r.PluginRef != "" || !(total > 0) || r.Shadow != nil && armNames[r.Shadow.ArmName()] {
				fail("arms %+v", *r)
			}
		}
		if sh := r.Shadow; sh != nil {
			for _, name := range r.Primaries() {
				if name == sh.PluginRef || sh.Weight != nil {
					fail("shadow %+v of %v", *sh, r.Primaries())
				}
			}
		}
		if name, ref := c.Experiment(); name == "" || ref != r {
			fail("Experiment() = %q, %p; want the slot %p", name, ref, r)
		}
	}
	if experiments > 1 {
		fail("%d experiments", experiments)
	}
}
