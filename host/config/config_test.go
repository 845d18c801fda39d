package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// y joins YAML lines; line n of the document is argument n, which keeps expected line numbers
// easy to check.
func y(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// binDir returns a directory holding an executable "plugin", a non-executable "plain" and a
// directory "dir".
func binDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plugin"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func ptr(v float64) *float64 { return &v }

func TestParseValid(t *testing.T) {
	dir := binDir(t)
	data := y(
		"plugins:",
		"  - name: queue",
		"    type: queue-scorer",
		"    parameters:",
		"      source: inflight",
		"  - name: composite",
		"    type: composite-scorer",
		"  - name: admit",
		"    type: always-admit",
		"  - name: rr",
		"    type: round-robin-picker",
		"  - name: sticky",
		"    type: prefix-affinity-filter",
		"    path: "+dir+"/plugin",
		"    args: [--strict]",
		"    sha256: "+hex64,
		`    version: ">=1.2.0, <2.0.0"`,
		"    timeout: 5ms",
		"    env: {GOMAXPROCS: \"2\", A_FLAG: \"\"}",
		"  - name: predictor",
		"    type: latency-producer",
		"    path: "+dir+"/plugin",
		"pipeline:",
		"  producer: {pluginRef: predictor}",
		"  filters:",
		"    - pluginRef: sticky",
		"  scorers:",
		"    - pluginRef: queue",
		"      weight: 2.5",
		"    - pluginRef: composite",
		"  admitter: {pluginRef: admit}",
		"  picker: {pluginRef: rr}",
		"  stageTimeout: 40ms",
		"  maxBatch: 8",
	)
	c, err := config.Parse("test.yaml", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &config.Config{
		Plugins: []config.PluginSpec{
			{Name: "queue", Type: "queue-scorer", Parameters: map[string]any{"source": "inflight"}},
			{Name: "composite", Type: "composite-scorer"},
			{Name: "admit", Type: "always-admit"},
			{Name: "rr", Type: "round-robin-picker"},
			{Name: "sticky", Type: "prefix-affinity-filter", Path: dir + "/plugin", Args: []string{"--strict"},
				Env:    map[string]string{"GOMAXPROCS": "2", "A_FLAG": ""},
				SHA256: hex64, Version: ">=1.2.0, <2.0.0", Timeout: 5 * time.Millisecond},
			{Name: "predictor", Type: "latency-producer", Path: dir + "/plugin"},
		},
		Pipeline: config.Pipeline{
			Producer:     &config.StageRef{PluginRef: "predictor"},
			Filters:      []config.StageRef{{PluginRef: "sticky"}},
			Scorers:      []config.StageRef{{PluginRef: "queue", Weight: ptr(2.5)}, {PluginRef: "composite"}},
			Admitter:     &config.StageRef{PluginRef: "admit"},
			Picker:       &config.StageRef{PluginRef: "rr"},
			StageTimeout: 40 * time.Millisecond,
			// 4 × stageTimeout; the SLO share and the age are the defaults
			StageTimeoutMax: 160 * time.Millisecond, StageTimeoutSLOShare: 0.1, PredictionMaxAge: 500 * time.Millisecond,
			MaxBatch:   8,
			MaxCohorts: 2,
		},
		Server: config.Server{Listen: config.DefaultListen, AdminListen: config.DefaultAdminListen,
			MaxBodyBytes: config.DefaultMaxBodyBytes, UpstreamTimeout: config.DefaultUpstreamTimeout,
			ConnectTimeout: config.DefaultConnectTimeout, FirstByteTimeout: config.DefaultFirstByteTimeout,
			MaxAttempts: config.DefaultMaxAttempts, Decisions: config.DefaultDecisions, ExtProcDestination: config.DestinationSingle,
			MaxConcurrentRequests: config.DefaultMaxConcurrentRequests, MaxHeaderBytes: config.DefaultMaxHeaderBytes,
			MaxHeaders: config.DefaultMaxHeaders, ReadHeaderTimeout: config.DefaultReadHeaderTimeout,
			ReadBodyTimeout: config.DefaultReadBodyTimeout, IdleTimeout: config.DefaultIdleTimeout,
			ShutdownGrace:     config.DefaultShutdownGrace,
			PrefixIndexBlocks: config.DefaultPrefixBlocks},
		Endpoints: config.Endpoints{OutlierDetection: config.OutlierDetection{ConsecutiveFailures: endpoints.DefaultConsecutiveFailures,
			BaseEjectionTime: endpoints.DefaultBaseEjectionTime, MaxEjectionTime: endpoints.DefaultMaxEjectionTime,
			MaxEjectionPercent: endpoints.DefaultMaxEjectionPercent}},
		Scrape: config.Scrape{Interval: config.DefaultScrapeInterval, Engine: config.DefaultEngine},
		FlowControl: config.FlowControl{Policy: config.DefaultFlowPolicy, FlowKey: config.DefaultFlowKey, FlowHeader: config.DefaultFlowHeader,
			Default:        config.BandLimits{MaxRequests: config.DefaultBandRequests, MaxBytes: config.DefaultBandBytes, TTL: config.DefaultBandTTL},
			NoEndpointsTTL: config.DefaultNoEndpointsTTL, Candidates: config.DefaultCandidates,
			Detector: config.Detector{TTFTMargin: 1, MaxPredictedWait: 500 * time.Millisecond, QueueDepth: 2, KVCacheUsage: 1,
				MaxMetricsAge: 200 * time.Millisecond, MaxQueueWait: 100 * time.Millisecond, SlotScrapes: 4}},
	}
	if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(config.Config{})); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if c.File() != "test.yaml" {
		t.Errorf("File() = %q, want test.yaml", c.File())
	}
	if p := c.Plugin("rr"); p == nil || p.Type != "round-robin-picker" || !p.Builtin() {
		t.Errorf("Plugin(rr) = %+v, want the built-in round-robin-picker", p)
	}
	if p := c.Plugin("sticky"); p == nil || p.Builtin() {
		t.Errorf("Plugin(sticky) = %+v, want a binary plugin", p)
	}
	if env := c.Plugin("sticky").Environ(); !cmp.Equal(env, []string{"A_FLAG=", "GOMAXPROCS=2"}) {
		t.Errorf("Environ() = %q, want sorted KEY=value entries", env)
	}
	if env := c.Plugin("rr").Environ(); len(env) != 0 {
		t.Errorf("Environ() of a plugin without env = %q, want none", env)
	}
	if p := c.Plugin("nope"); p != nil {
		t.Errorf("Plugin(nope) = %+v, want nil", p)
	}

	stages := map[string]sdk.Stage{
		"predictor": sdk.StageProducer, "sticky": sdk.StageFilter, "queue": sdk.StageScorer,
		"composite": sdk.StageScorer, "admit": sdk.StageAdmitter, "rr": sdk.StagePicker,
		"nope": sdk.StageUnspecified,
	}
	for name, want := range stages {
		if got := c.StageOf(name); got != want {
			t.Errorf("StageOf(%q) = %v, want %v", name, got, want)
		}
	}
	weights := []float64{2.5, 1} // queue says 2.5; composite says nothing, so 1
	for i, want := range weights {
		if got := c.Pipeline.Scorers[i].WeightOr1(); got != want {
			t.Errorf("Scorers[%d].WeightOr1() = %v, want %v", i, got, want)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	data := y(
		"plugins:",
		"  - name: q",
		"    type: queue-scorer",
		"pipeline:",
		"  scorers:",
		"    - pluginRef: q",
		"  maxBatch: 0", // zero means unset
	)
	c, err := config.Parse("test.yaml", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Pipeline.StageTimeout != 25*time.Millisecond {
		t.Errorf("StageTimeout = %v, want 25ms", c.Pipeline.StageTimeout)
	}
	if c.Pipeline.StageTimeoutMax != 100*time.Millisecond { // 4 × 25ms
		t.Errorf("StageTimeoutMax = %v, want 100ms", c.Pipeline.StageTimeoutMax)
	}
	if c.Pipeline.StageTimeoutSLOShare != 0.1 || c.Pipeline.PredictionMaxAge != 500*time.Millisecond {
		t.Errorf("StageTimeoutSLOShare, PredictionMaxAge = %v, %v; want 0.1, 500ms", c.Pipeline.StageTimeoutSLOShare, c.Pipeline.PredictionMaxAge)
	}
	if c.Pipeline.MaxBatch != 16 {
		t.Errorf("MaxBatch = %d, want 16", c.Pipeline.MaxBatch)
	}
	if c.Pipeline.MaxCohorts != 2 {
		t.Errorf("MaxCohorts = %d, want 2", c.Pipeline.MaxCohorts)
	}
	if w := c.Pipeline.Scorers[0].WeightOr1(); w != 1 {
		t.Errorf("WeightOr1() = %v, want 1", w)
	}
	if c.Pipeline.Producer != nil || c.Pipeline.Admitter != nil || c.Pipeline.Picker != nil {
		t.Errorf("optional stages = %+v, want nil", c.Pipeline)
	}
	if w := (config.StageRef{Weight: ptr(0)}).WeightOr1(); w != 0 {
		t.Errorf("an explicit weight 0: WeightOr1() = %v, want 0", w)
	}
}

func TestLoadResolvesPathsAgainstConfigDir(t *testing.T) {
	dir := binDir(t)
	cfgDir := filepath.Join(dir, "conf")
	if err := os.MkdirAll(filepath.Join(cfgDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "bin", "scorer"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cfgDir, "foresight.yaml")
	data := y(
		"plugins:",
		"  - name: rel",
		"    type: latency-scorer",
		"    path: bin/scorer",
		"  - name: abs",
		"    type: latency-scorer",
		"    path: "+dir+"/plugin",
		"  - name: q",
		"    type: queue-scorer",
		"pipeline:",
		"  scorers: [{pluginRef: rel}, {pluginRef: abs}, {pluginRef: q}]",
	)
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(file)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct{ name, want string }{
		{"rel", filepath.Join(cfgDir, "bin", "scorer")}, // relative to conf/, not to the test's cwd
		{"abs", dir + "/plugin"},
		{"q", ""}, // a built-in has no binary
	}
	for _, tt := range tests {
		if got := c.ResolvePath(c.Plugin(tt.name)); got != tt.want {
			t.Errorf("ResolvePath(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}

	// The same file parsed as if it lived elsewhere: the relative binary is not found there.
	_, err = config.Parse("elsewhere/test.yaml", []byte(data))
	want := "elsewhere/test.yaml:4: plugins[0].path: plugin \"rel\": binary elsewhere/bin/scorer: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Parse elsewhere: got %v, want %s", err, want)
	}

	if _, err := config.Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.HasPrefix(err.Error(), "reading config: ") {
		t.Errorf("Load(missing) = %v, want a reading config error", err)
	}
}

// scorerQ is a minimal valid tail: a plugin q used as a scorer.
var scorerQ = []string{"  - name: q", "    type: queue-scorer"}

func TestParseErrors(t *testing.T) {
	dir := binDir(t)
	plugins := func(entries ...string) []string { return append(append([]string{"plugins:"}, scorerQ...), entries...) }
	withPipeline := func(lines []string, pipeline ...string) string {
		return y(append(append(lines, "pipeline:", "  scorers: [{pluginRef: q}]"), pipeline...)...)
	}
	tests := []struct {
		name string
		yaml string
		want string // exact message, with $DIR for the binaries' directory
		// prefix accepts any message starting with want (for messages quoting a library's error).
		prefix bool
	}{
		{"empty file", "", "test.yaml: the file is empty", false},
		{"only a comment", "# nothing yet\n", "test.yaml: the file is empty", false},
		{"syntax error", y("plugins:", "  - name: q", "    type: a: b"),
			"test.yaml:3: mapping values are not allowed in this context", false},
		{"unknown top-level field", withPipeline(plugins(), "servers: {}"),
			`test.yaml:6: unknown field "servers" in the top level (known: plugins, pipeline, profiles, profileHandler, server, endpoints, scrape, objectives, flowControl, disaggregation, state, kvEvents)`, false},
		{"unknown field in server", withPipeline(plugins(), "server: {port: 80}"),
			`test.yaml:6: unknown field "port" in server (known: listen, adminListen, extProcListen, extProcDestination, unknownModels, adminToken, readToken, pluginDirs, allowUnpinnedSwaps, maxBodyBytes, upstreamTimeout, connectTimeout, firstByteTimeout, maxAttempts, maxConcurrentRequests, maxInflightPerEndpoint, maxHeaderBytes, maxHeaders, readHeaderTimeout, readBodyTimeout, idleTimeout, shutdownGrace, decisions, prefixIndexBlocks, decisionConcurrency, streamFlushInterval)`, false},
		{"unknown field in an endpoint", withPipeline(plugins(), "endpoints:", "  static:", "    - {addr: 127.0.0.1:8000}"),
			`test.yaml:8: unknown field "addr" in an endpoint entry (known: id, address, labels, kvEvents, kvEventsReplay)`, false},
		{"listen not host:port", withPipeline(plugins(), "server: {listen: \"8080\"}"),
			`test.yaml:6: server.listen: "8080" is not host:port: address 8080: missing port in address`, false},
		{"negative body limit", withPipeline(plugins(), "server: {maxBodyBytes: -1}"),
			`test.yaml:6: server.maxBodyBytes: must be positive`, false},
		{"negative decision concurrency", withPipeline(plugins(), "server: {decisionConcurrency: -1}"),
			`test.yaml:6: server.decisionConcurrency: must not be negative (0: twice the endpoints), got -1`, false},
		{"negative stream flush interval", withPipeline(plugins(), "server: {streamFlushInterval: -1ms}"),
			`test.yaml:6: server.streamFlushInterval: must not be negative, got -1ms`, false},
		{"unknown destination form", withPipeline(plugins(), "server: {extProcDestination: csv}"),
			`test.yaml:6: server.extProcDestination: "csv" is not a destination form: single (one endpoint) or list (the picks, comma-separated)`, false},
		{"unknown choice for unknown models", withPipeline(plugins(), "server: {unknownModels: drop}"),
			`test.yaml:6: server.unknownModels: "drop" is not a choice: route (to any endpoint in the rotation) or refuse (404 model_not_found)`, false},
		{"unknown engine", withPipeline(plugins(), "scrape: {engine: tgi}"),
			`test.yaml:6: scrape.engine: "tgi" is not an engine: vllm or sglang`, false},
		{"endpoint without address", withPipeline(plugins(), "endpoints:", "  static:", "    - {id: a}"),
			`test.yaml:8: endpoints.static[0].address: address is required (host:port or http://host:port)`, false},
		{"endpoint address garbage", withPipeline(plugins(), "endpoints:", "  static:", "    - {address: not an address}"),
			`test.yaml:8: endpoints.static[0].address: address "not an address" is neither host:port nor an http(s) URL`, false},
		{"bad outlier detection", withPipeline(plugins(), "endpoints:", "  outlierDetection: {maxEjectionPercent: 150}"),
			`test.yaml:7: endpoints.outlierDetection: max ejection percent must be in [0, 100], got 150`, false},
		{"duplicate endpoint id", withPipeline(plugins(), "endpoints:", "  static:", "    - {address: 127.0.0.1:8000}", "    - {address: 127.0.0.1:8000}"),
			`test.yaml:9: endpoints.static[1].id: "127.0.0.1:8000" is also endpoint 0's id`, false},
		{"unknown field in endpoints.kubernetes", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    pool: llama"),
			`test.yaml:8: unknown field "pool" in endpoints.kubernetes (known: namespace, inferencePool, selector, targetPort, kubeconfig, kvEventsPort)`, false},
		{"kubernetes naming no pods", withPipeline(plugins(), "endpoints:", "  kubernetes: {namespace: llm}"),
			`test.yaml:7: endpoints.kubernetes: name the pods: inferencePool (an InferencePool of the namespace) or selector (their labels) with targetPort; got neither`, false},
		{"kubernetes with an empty selector", withPipeline(plugins(), "endpoints:", "  kubernetes: {selector: {}, targetPort: 8000}"),
			`test.yaml:7: endpoints.kubernetes: name the pods: inferencePool (an InferencePool of the namespace) or selector (their labels) with targetPort; got neither`, false},
		{"kubernetes pool and selector", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    inferencePool: llama", "    selector: {app: vllm}"),
			`test.yaml:9: endpoints.kubernetes.selector: give inferencePool or selector, not both`, false},
		{"kubernetes pool with a targetPort", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    inferencePool: llama", "    targetPort: 8000"),
			`test.yaml:9: endpoints.kubernetes.targetPort: the InferencePool names its ports (spec.targetPorts); remove targetPort`, false},
		{"kubernetes selector without a targetPort", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    selector: {app: vllm}"),
			`test.yaml:7: endpoints.kubernetes.targetPort: required with a selector: the pods' port, a number (8000) or a container port's name (http)`, false},
		{"kubernetes targetPort out of range", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    selector: {app: vllm}", "    targetPort: 70000"),
			`test.yaml:9: endpoints.kubernetes.targetPort: must be in [1, 65535], got 70000`, false},
		{"kubernetes targetPort quoted number", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    selector: {app: vllm}", `    targetPort: "8000"`),
			`test.yaml:9: endpoints.kubernetes.targetPort: "8000" is not a container port's name: must contain at least one letter (a-z)`, false},
		{"kubernetes targetPort a list", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    selector: {app: vllm}", "    targetPort: [8000]"),
			`test.yaml:9: endpoints.kubernetes.targetPort: want a port number (8000) or a container port's name (http)`, false},
		{"kubernetes bad namespace", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    namespace: LLM", "    inferencePool: llama"),
			`test.yaml:8: endpoints.kubernetes.namespace: "LLM" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`, false},
		{"kubernetes bad pool name", withPipeline(plugins(), "endpoints:", "  kubernetes: {inferencePool: Llama_3}"),
			`test.yaml:7: endpoints.kubernetes.inferencePool: "Llama_3" is not an object name: `, true},
		{"kubernetes bad label value", withPipeline(plugins(), "endpoints:", "  kubernetes:", "    selector:", "      app: vllm server", "    targetPort: http"),
			`test.yaml:9: endpoints.kubernetes.selector.app: "vllm server" is not a label value: `, true},
		{"kubernetes with a file", withPipeline(plugins(), "endpoints:", "  file: fleet.yaml", "  kubernetes: {inferencePool: llama}"),
			`test.yaml:8: endpoints.kubernetes: cannot be combined with endpoints.file: the cluster is the source of the list (endpoints.static may stay beside it)`, false},
		{"duplicate objective", withPipeline(plugins(), "objectives:", "  - {name: batch, priority: -1}", "  - {name: batch, priority: 2}"),
			`test.yaml:8: objectives[1].name: "batch" is also objective 0's name`, false},
		{"unknown field in a plugin entry", withPipeline(plugins("    params: {}")),
			`test.yaml:4: unknown field "params" in a plugin entry (known: name, type, path, args, env, sha256, version, timeout, parameters)`, false},
		{"unknown field in pipeline", withPipeline(plugins(), "  scorer: []"),
			`test.yaml:6: unknown field "scorer" in pipeline (known: producer, filters, scorers, admitter, picker, detector, order, stageTimeout, stageTimeoutMax, stageTimeoutSLOShare, predictionMaxAge, maxBatch, maxCohorts)`, false},
		{"unknown field in a stage reference", y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers:", "    - pluginRef: q", "      wieght: 2"),
			`test.yaml:7: unknown field "wieght" in a stage reference (known: pluginRef, weight, arms, shadow)`, false},
		{"wrong type", withPipeline(plugins(), "  maxBatch: many"),
			"test.yaml:6: pipeline.maxBatch: cannot unmarshal !!str `many` into int", false},
		{"two wrong types, one line each", withPipeline(plugins("    args: oops"), "  maxBatch: many"),
			"test.yaml:4: plugins[0].args: cannot unmarshal !!str `oops` into []string\ntest.yaml:7: pipeline.maxBatch: cannot unmarshal !!str `many` into int", false},
		{"bad duration", withPipeline(plugins(), "  stageTimeout: soon"),
			"test.yaml:6: pipeline.stageTimeout: cannot unmarshal !!str `soon` into time.Duration", false},
		{"missing name", withPipeline([]string{"plugins:", "  - type: queue-scorer"}),
			"test.yaml:2: plugins[0].name: missing; every plugin needs a name the pipeline can refer to", false},
		{"upper case and underscore in name", withPipeline([]string{"plugins:", "  - name: Queue_1", "    type: queue-scorer"}),
			`test.yaml:2: plugins[0].name: "Queue_1" must be lower-case letters, digits and dashes`, false},
		{"name ending in a dash", withPipeline([]string{"plugins:", "  - name: q-", "    type: queue-scorer"}),
			`test.yaml:2: plugins[0].name: "q-" must be lower-case letters, digits and dashes`, false},
		{"duplicate name: line of the second", withPipeline(plugins("  - name: q", "    type: prefix-cache-scorer")),
			`test.yaml:4: plugins[1].name: plugin "q" is declared twice (first as plugins[0])`, false},
		{"missing type: line of the entry", withPipeline([]string{"plugins:", "  - name: q"}),
			`test.yaml:2: plugins[0].type: plugin "q": missing type`, false},
		{"type not kebab-case", withPipeline([]string{"plugins:", "  - name: q", "    type: QueueScorer"}),
			`test.yaml:3: plugins[0].type: plugin "q": type "QueueScorer" must be kebab-case`, false},
		{"sha256 too short", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/plugin", "    sha256: abc123"), "  filters: [{pluginRef: b}]"),
			`test.yaml:7: plugins[1].sha256: plugin "b": want 64 hex digits, got "abc123"`, false},
		{"sha256 not hex", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/plugin", "    sha256: "+strings.Repeat("z", 64)), "  filters: [{pluginRef: b}]"),
			`test.yaml:7: plugins[1].sha256: plugin "b": want 64 hex digits, got "` + strings.Repeat("z", 64) + `"`, false},
		{"invalid version constraint", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/plugin", "    version: one-ish"), "  filters: [{pluginRef: b}]"),
			`test.yaml:7: plugins[1].version: plugin "b": invalid version constraint "one-ish": `, true},
		{"sha256 on a built-in", withPipeline(plugins("    sha256: " + hex64)),
			`test.yaml:2: plugins[0].path: plugin "q": sha256, version, args and env need a path to a binary`, false},
		{"version on a built-in", withPipeline(plugins(`    version: ">=1.0.0"`)),
			`test.yaml:2: plugins[0].path: plugin "q": sha256, version, args and env need a path to a binary`, false},
		{"args on a built-in", withPipeline(plugins("    args: [-v]")),
			`test.yaml:2: plugins[0].path: plugin "q": sha256, version, args and env need a path to a binary`, false},
		{"env on a built-in", withPipeline(plugins("    env: {GOMAXPROCS: \"2\"}")),
			`test.yaml:2: plugins[0].path: plugin "q": sha256, version, args and env need a path to a binary`, false},
		{"env name with =", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/plugin", "    env:", `      "A=B": x`), "  filters: [{pluginRef: b}]"),
			`test.yaml:7: plugins[1].env: plugin "b": invalid variable name "A=B"`, false},
		{"missing binary", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/nope"), "  filters: [{pluginRef: b}]"),
			`test.yaml:6: plugins[1].path: plugin "b": binary $DIR/nope: no such file or directory`, false},
		{"non-executable file", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/plain"), "  filters: [{pluginRef: b}]"),
			`test.yaml:6: plugins[1].path: plugin "b": $DIR/plain is not an executable file`, false},
		{"directory as binary", withPipeline(plugins("  - name: b", "    type: t", "    path: $DIR/dir"), "  filters: [{pluginRef: b}]"),
			`test.yaml:6: plugins[1].path: plugin "b": $DIR/dir is not an executable file`, false},
		{"negative plugin timeout", withPipeline(plugins("    timeout: -1ms")),
			`test.yaml:4: plugins[0].timeout: plugin "q": must be in [0s, 10s] (0: the pipeline's stageTimeout), got -1ms`, false},
		// An hour's deadline would hold every decision an hour on a plugin that stopped answering,
		// and its hang would never be seen: deadlines stop at 10 s.
		{"plugin timeout over the cap", withPipeline(plugins("    timeout: 1000h")),
			`test.yaml:4: plugins[0].timeout: plugin "q": must be in [0s, 10s] (0: the pipeline's stageTimeout), got 1000h0m0s`, false},
		{"pluginRef to an undeclared plugin", withPipeline(plugins(), "  picker:", "    pluginRef: nope"),
			`test.yaml:7: pipeline.picker.pluginRef: no plugin named "nope" is declared under plugins`, false},
		{"missing pluginRef", withPipeline(plugins(), "  picker:", "    weight: 1"),
			`test.yaml:6: pipeline.picker.pluginRef: missing`, false},
		{"weight on a non-scorer", withPipeline(plugins("  - name: rr", "    type: round-robin-picker"), "  picker:", "    pluginRef: rr", "    weight: 2"),
			`test.yaml:10: pipeline.picker.weight: only scorers take a weight`, false},
		{"negative weight", y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers:", "    - pluginRef: q", "      weight: -0.5"),
			`test.yaml:7: pipeline.scorers[0].weight: must be in [0, 1e6], got -0.5`, false},
		{"NaN weight", y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers:", "    - pluginRef: q", "      weight: .nan"),
			`test.yaml:7: pipeline.scorers[0].weight: must be in [0, 1e6], got NaN`, false},
		{"huge weight", y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers:", "    - pluginRef: q", "      weight: 2e6"),
			`test.yaml:7: pipeline.scorers[0].weight: must be in [0, 1e6], got 2e+06`, false},
		{"plugin in two stages", withPipeline(plugins(), "  picker: {pluginRef: q}"),
			`test.yaml:6: pipeline.picker.pluginRef: plugin "q" already serves as scorer; a plugin serves one stage`, false},
		{"declared but unused", withPipeline(plugins("  - name: idle", "    type: kv-cache-utilization-scorer")),
			`test.yaml:4: plugins[1].name: plugin "idle" is declared but the pipeline does not use it`, false},
		{"maxBatch below 1", withPipeline(plugins(), "  maxBatch: -1"),
			`test.yaml:6: pipeline.maxBatch: must be in [1, 1024], got -1`, false},
		{"maxBatch above 1024", withPipeline(plugins(), "  maxBatch: 1025"),
			`test.yaml:6: pipeline.maxBatch: must be in [1, 1024], got 1025`, false},
		{"maxCohorts below 1", withPipeline(plugins(), "  maxCohorts: -1"),
			`test.yaml:6: pipeline.maxCohorts: must be in [1, 64], got -1`, false},
		{"maxCohorts above 64", withPipeline(plugins(), "  maxCohorts: 65"),
			`test.yaml:6: pipeline.maxCohorts: must be in [1, 64], got 65`, false},
		{"negative stageTimeout", withPipeline(plugins(), "  stageTimeout: -5ms"),
			`test.yaml:6: pipeline.stageTimeout: must be in (0s, 10s], got -5ms`, false},
		{"stageTimeout over the cap", withPipeline(plugins(), "  stageTimeout: 11s"),
			`test.yaml:6: pipeline.stageTimeout: must be in (0s, 10s], got 11s`, false},
		{"stageTimeoutMax below stageTimeout", withPipeline(plugins(), "  stageTimeout: 40ms", "  stageTimeoutMax: 30ms"),
			`test.yaml:7: pipeline.stageTimeoutMax: must be in [stageTimeout (40ms), 10s], got 30ms`, false},
		{"stageTimeoutMax over the cap", withPipeline(plugins(), "  stageTimeoutMax: 11s"),
			`test.yaml:6: pipeline.stageTimeoutMax: must be in [stageTimeout (25ms), 10s], got 11s`, false},
		{"stageTimeoutSLOShare above 1", withPipeline(plugins(), "  stageTimeoutSLOShare: 1.5"),
			`test.yaml:6: pipeline.stageTimeoutSLOShare: must be in (0, 1], got 1.5`, false},
		{"negative stageTimeoutSLOShare", withPipeline(plugins(), "  stageTimeoutSLOShare: -0.1"),
			`test.yaml:6: pipeline.stageTimeoutSLOShare: must be in (0, 1], got -0.1`, false},
		{"negative predictionMaxAge", withPipeline(plugins(), "  predictionMaxAge: -1s"),
			`test.yaml:6: pipeline.predictionMaxAge: must be in (0s, 1m0s], got -1s`, false},
		{"predictionMaxAge over the cap", withPipeline(plugins(), "  predictionMaxAge: 2m"),
			`test.yaml:6: pipeline.predictionMaxAge: must be in (0s, 1m0s], got 2m0s`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse("test.yaml", []byte(strings.ReplaceAll(tt.yaml, "$DIR", dir)))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v; want error %q", c, tt.want)
			}
			want := strings.ReplaceAll(tt.want, "$DIR", dir)
			if got := err.Error(); got != want && !(tt.prefix && strings.HasPrefix(got, want)) {
				t.Errorf("Parse error:\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestParseBoundaries(t *testing.T) {
	tests := []struct {
		name     string
		pipeline string
	}{
		{"maxBatch 1", "  maxBatch: 1"},
		{"maxBatch 1024", "  maxBatch: 1024"},
		{"maxCohorts 1", "  maxCohorts: 1"},
		{"maxCohorts 64", "  maxCohorts: 64"},
		{"stageTimeoutMax equal to stageTimeout: a fixed deadline", "  stageTimeoutMax: 25ms"},
		{"stageTimeoutMax 10s", "  stageTimeoutMax: 10s"},
		{"the default stageTimeoutMax stays within 10s", "  stageTimeout: 9s"},
		{"stageTimeoutSLOShare 1", "  stageTimeoutSLOShare: 1"},
		{"predictionMaxAge 1m", "  predictionMaxAge: 1m"},
		{"weight 0", "  scorers: [{pluginRef: q, weight: 0}]"},
		{"weight 1e6", "  scorers: [{pluginRef: q, weight: 1e6}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers: [{pluginRef: q}]")
			if strings.Contains(tt.pipeline, "scorers") {
				data = y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", tt.pipeline)
			} else {
				data += tt.pipeline + "\n"
			}
			if _, err := config.Parse("test.yaml", []byte(data)); err != nil {
				t.Errorf("Parse: %v", err)
			}
		})
	}
}

// A wrong YAML type is reported with the file, the line and the field (yaml.v3 names only the Go type).
func TestParseWrongTypeNamesField(t *testing.T) {
	data := y("plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers: [{pluginRef: q}]", "  maxBatch: many")
	_, err := config.Parse("test.yaml", []byte(data))
	if err == nil || !strings.Contains(err.Error(), "maxBatch") {
		t.Errorf("Parse error = %v, want it to name maxBatch", err)
	}
}

func TestParseRouterSections(t *testing.T) {
	data := y(
		"plugins:", scorerQ[0], scorerQ[1],
		"pipeline:", "  scorers: [{pluginRef: q}]",
		"server:", "  listen: 0.0.0.0:8000", "  adminListen: 127.0.0.1:9100", "  maxBodyBytes: 1024",
		"  upstreamTimeout: 30s", "  connectTimeout: 500ms", "  firstByteTimeout: 5s", "  maxAttempts: 2",
		"  maxConcurrentRequests: 50", "  maxInflightPerEndpoint: 8", "  maxHeaderBytes: 4096", "  maxHeaders: 20",
		"  readHeaderTimeout: 2s", "  readBodyTimeout: 3s", "  idleTimeout: 4s",
		"  decisions: 10", "  prefixIndexBlocks: 1000",
		"  decisionConcurrency: 4", "  streamFlushInterval: 25ms",
		"  shutdownGrace: 7s", "  extProcDestination: list", "  unknownModels: refuse",
		"endpoints:", "  static:",
		"    - {id: a, address: 10.0.0.1:8000, labels: {accelerator: h100}}",
		"    - {address: http://10.0.0.2:8000}",
		"  file: fleet.yaml",
		"scrape: {interval: 100ms, engine: sglang, metrics: {waiting: my_waiting}}",
		"objectives:", "  - {name: premium, priority: 2}", "  - {name: batch, priority: -1}",
	)
	c, err := config.Parse("/etc/foresight/router.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Server{Listen: "0.0.0.0:8000", AdminListen: "127.0.0.1:9100", MaxBodyBytes: 1024,
		UpstreamTimeout: 30 * time.Second, ConnectTimeout: 500 * time.Millisecond, FirstByteTimeout: 5 * time.Second,
		MaxAttempts: 2, MaxConcurrentRequests: 50, MaxInflightPerEndpoint: 8, MaxHeaderBytes: 4096, MaxHeaders: 20,
		ReadHeaderTimeout: 2 * time.Second, ReadBodyTimeout: 3 * time.Second, IdleTimeout: 4 * time.Second, Decisions: 10, PrefixIndexBlocks: 1000, DecisionConcurrency: 4,
		StreamFlushInterval: 25 * time.Millisecond, ShutdownGrace: 7 * time.Second,
		ExtProcDestination: config.DestinationList, UnknownModels: config.UnknownModelsRefuse}
	if diff := cmp.Diff(want, c.Server); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	eps := []config.EndpointSpec{{ID: "a", Address: "10.0.0.1:8000", Labels: map[string]string{"accelerator": "h100"}},
		{ID: "http://10.0.0.2:8000", Address: "http://10.0.0.2:8000"}}
	if diff := cmp.Diff(eps, c.Endpoints.Static); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if got := c.EndpointsFile(); got != "/etc/foresight/fleet.yaml" {
		t.Errorf("EndpointsFile() = %q, want it resolved against the config's directory", got)
	}
	scrape := config.Scrape{Interval: 100 * time.Millisecond, Engine: "sglang", Metrics: config.MetricNames{Waiting: "my_waiting"}}
	if diff := cmp.Diff(scrape, c.Scrape); diff != "" {
		t.Errorf("scrape (-want +got):\n%s", diff)
	}
	if p, ok := c.Priority("batch"); !ok || p != -1 {
		t.Errorf("Priority(batch) = %d, %v", p, ok)
	}
	if _, ok := c.Priority("gold"); ok {
		t.Error("an undeclared objective has a priority")
	}
}

func TestParseKubernetes(t *testing.T) {
	head := []string{"plugins:", scorerQ[0], scorerQ[1], "pipeline:", "  scorers: [{pluginRef: q}]"}
	tests := []struct {
		name           string
		lines          []string
		want           config.Kubernetes
		wantKubeconfig string
	}{
		{"a pool", []string{"endpoints:", "  kubernetes: {inferencePool: llama}"},
			config.Kubernetes{InferencePool: "llama"}, ""},
		{"a selector on a numbered port, in a namespace, with a kubeconfig",
			[]string{"endpoints:", "  kubernetes:", "    namespace: llm", "    selector: {app: vllm, example.com/tier: gpu}", "    targetPort: 8000", "    kubeconfig: kube/config"},
			config.Kubernetes{Namespace: "llm", Selector: map[string]string{"app": "vllm", "example.com/tier": "gpu"},
				TargetPort: config.PortRef{Number: 8000}, Kubeconfig: "kube/config"}, "/etc/foresight/kube/config"},
		{"a named port beside static endpoints",
			[]string{"endpoints:", "  static: [{id: gpu-box, address: 10.0.0.9:8000}]", "  kubernetes: {selector: {app: vllm}, targetPort: http}"},
			config.Kubernetes{Selector: map[string]string{"app": "vllm"}, TargetPort: config.PortRef{Name: "http"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse("/etc/foresight/router.yaml", []byte(y(append(append([]string{}, head...), tt.lines...)...)))
			if err != nil {
				t.Fatal(err)
			}
			if c.Endpoints.Kubernetes == nil {
				t.Fatal("endpoints.kubernetes is nil")
			}
			if diff := cmp.Diff(tt.want, *c.Endpoints.Kubernetes); diff != "" {
				t.Errorf("endpoints.kubernetes (-want +got):\n%s", diff)
			}
			if got := c.KubeconfigFile(); got != tt.wantKubeconfig {
				t.Errorf("KubeconfigFile() = %q, want %q", got, tt.wantKubeconfig)
			}
		})
	}
	c, err := config.Parse("test.yaml", []byte(y(head...)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoints.Kubernetes != nil || c.KubeconfigFile() != "" {
		t.Errorf("without the section: kubernetes %+v, kubeconfig %q", c.Endpoints.Kubernetes, c.KubeconfigFile())
	}
	if got := (config.PortRef{Number: 8000}).String() + " " + (config.PortRef{Name: "http"}).String(); got != "8000 http" {
		t.Errorf("PortRef.String: %s", got)
	}
}
