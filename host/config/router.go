package config

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Server configures the live router's listeners (foresight serve).
type Server struct {
	// Listen is the OpenAI API's address (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// AdminListen serves /metrics, /debug/decisions, /health and the /admin API (default
	// 127.0.0.1:9090). Bound to anything but a loopback address it requires AdminToken; without
	// a token it answers only requests from this machine that name it by a loopback Host.
	AdminListen string `yaml:"adminListen"`
	// ExtProcListen, when set, serves the endpoint picker of a Kubernetes Inference Gateway on
	// this address: Envoy's external processing gRPC protocol, through which the gateway asks
	// which endpoint serves each request (docs/kubernetes.md), with the gRPC health services
	// liveness and readiness. Default "": off (serve --ext-proc sets it).
	ExtProcListen string `yaml:"extProcListen"`
	// ExtProcDestination is how the endpoint picker names its pick to the gateway:
	// DestinationSingle (the default) puts one ip:port, the first pick, in the
	// x-gateway-destination-endpoint header and the envoy.lb metadata key of that name, and the
	// second pick in the metadata key x-gateway-destination-endpoint-fallback (the inference
	// extension's reference Envoy config routes to one endpoint it parses from that header);
	// DestinationList puts the picks, MaxAttempts in all, comma-separated in both, for gateways
	// whose Envoy uses the override_host load-balancing policy and tries them in order.
	ExtProcDestination string `yaml:"extProcDestination"`
	// UnknownModels is what the router does with a request for a model that no endpoint in the
	// rotation lists: UnknownModelsRoute sends it to any of them (vLLM loads LoRA adapters on
	// demand), UnknownModelsRefuse answers 404 model_not_found. Unset, each front keeps its own
	// default: route on the endpoint picker (the inference extension's pool routes any model),
	// refuse on the OpenAI API; set, the value applies to both.
	UnknownModels string `yaml:"unknownModels"`
	// AdminToken, when set, is the bearer token every admin request but GET /health and GET
	// /dashboard must carry (Authorization: Bearer TOKEN). The environment variable
	// FORESIGHT_ADMIN_TOKEN, when set, takes its place, so the secret need not sit in the file.
	// At least MinTokenLength printable characters, no spaces.
	AdminToken string `yaml:"adminToken"`
	// ReadToken, when set, is a second bearer token that reads and changes nothing: GET /metrics,
	// /debug/decisions, /admin/pipeline, /admin/experiments and /admin/dashboard.json (a
	// Prometheus scrape's token). $FORESIGHT_READ_TOKEN takes its place. The admin token reads
	// too. The same rules as AdminToken, and not the same token.
	ReadToken string `yaml:"readToken"`
	// PluginDirs lists the directories plugin binaries may come from (relative to the config
	// file's directory unless absolute; symlinks resolved, in the directories and in the
	// binaries' paths alike). Set, it binds every plugin of the file and of PUT /admin/stages;
	// unset, PUT /admin/stages may launch only binaries that lie in a directory of a binary
	// the file itself declares (plugindirs.go).
	PluginDirs []string `yaml:"pluginDirs"`
	// AllowUnpinnedSwaps lets PUT /admin/stages launch a binary without its sha256 (default
	// false: a swap must pin the binary it launches).
	AllowUnpinnedSwaps bool `yaml:"allowUnpinnedSwaps"`
	// MaxBodyBytes bounds a request body; a larger one is answered 413 (default 4 MiB).
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// UpstreamTimeout bounds a whole upstream response, from dispatch to its last byte (default 10m).
	UpstreamTimeout time.Duration `yaml:"upstreamTimeout"`
	// ConnectTimeout bounds connecting to an endpoint; past it the next picked endpoint is tried
	// (default 2s).
	ConnectTimeout time.Duration `yaml:"connectTimeout"`
	// FirstByteTimeout bounds a streamed request's wait for the first event of an endpoint's
	// answer (its queueing and prefill included); past it the next picked endpoint is tried
	// (default 60s, nginx's proxy_read_timeout). A whole (non-streamed) answer has no byte before
	// it is complete, so upstreamTimeout alone bounds it.
	FirstByteTimeout time.Duration `yaml:"firstByteTimeout"`
	// MaxAttempts bounds the endpoints one request is sent to, the first included: an attempt
	// that fails before the client got a byte (no connection, a reset, a 5xx, no first byte, an
	// answer that is not OpenAI's) moves on to the next picked endpoint, never one already tried
	// (default 3).
	MaxAttempts int `yaml:"maxAttempts"`
	// MaxConcurrentRequests bounds the completion requests the router holds at once, from
	// receipt to the end of the answer; one more is answered 429 at once (default 10000).
	MaxConcurrentRequests int `yaml:"maxConcurrentRequests"`
	// MaxInflightPerEndpoint, when positive, leaves an endpoint with that many of the router's
	// requests in flight out of the cycle; with every endpoint at the bound a request is answered
	// 429 (default 0: no bound; the engine queues what it cannot run).
	MaxInflightPerEndpoint int `yaml:"maxInflightPerEndpoint"`
	// MaxHeaderBytes and MaxHeaders bound a request's header section, in bytes (names and values)
	// and in fields; beyond either the request is answered 431 (defaults 60 KiB and 100, Envoy's
	// max_request_headers_kb and max_headers_count).
	MaxHeaderBytes int `yaml:"maxHeaderBytes"`
	MaxHeaders     int `yaml:"maxHeaders"`
	// ReadHeaderTimeout bounds reading a request's headers, ReadBodyTimeout its body, and
	// IdleTimeout how long a kept-alive connection waits for its next request (defaults 10s, 30s,
	// 120s: longer than the 90s clients' connection pools keep an idle connection, so the router
	// does not close one under a client's request).
	ReadHeaderTimeout time.Duration `yaml:"readHeaderTimeout"`
	ReadBodyTimeout   time.Duration `yaml:"readBodyTimeout"`
	IdleTimeout       time.Duration `yaml:"idleTimeout"`
	// ShutdownGrace is how long a stopping router (SIGTERM, SIGINT) lets the requests in flight on
	// both fronts finish; past it the ones left end with the router's error (503,
	// router_shutting_down: an error event in a stream) before the connections close (default 25s:
	// under Kubernetes' 30 s terminationGracePeriodSeconds, with room for the plugins to stop).
	ShutdownGrace time.Duration `yaml:"shutdownGrace"`
	// Decisions is how many decision traces /debug/decisions keeps (default 256).
	Decisions int `yaml:"decisions"`
	// PrefixIndexBlocks bounds the router's prefix index per endpoint, in 16-token blocks, until
	// the engine reports its own capacity (vllm:cache_config_info num_gpu_blocks; SGLang does
	// not) (default 65536: a 1M-token KV cache).
	PrefixIndexBlocks int `yaml:"prefixIndexBlocks"`
	// DecisionConcurrency is the most requests one decision round takes: requests that arrive
	// together are decided in one batch through the pipeline, and each is dispatched only if the
	// ones before it in the round left its decision as it was (else it is decided again in the
	// next round), so every decision counts the requests decided before it. Default 0: twice the
	// endpoints; 1: one request after the other.
	DecisionConcurrency int `yaml:"decisionConcurrency"`
	// StreamFlushInterval, when positive, lets a stream's tokens after the first wait up to this
	// long after the previous flush, so several go to the client in one write (less router CPU per
	// token; the first token and the end of a stream are never held). Default 0: every token as it
	// comes.
	StreamFlushInterval time.Duration `yaml:"streamFlushInterval"`
}

// Endpoints lists the model servers: a static list, a file watched for changes, the pods of a
// Kubernetes cluster, or the static list beside either of the others.
type Endpoints struct {
	Static []EndpointSpec `yaml:"static"`
	// File, relative to the config file's directory unless absolute, holds more endpoints
	// ("endpoints:" followed by entries shaped like Static's); it is re-read when it changes.
	File string `yaml:"file"`
	// Kubernetes, when set, discovers more endpoints in the cluster (host/kube); not with File.
	Kubernetes *Kubernetes `yaml:"kubernetes"`
	// OutlierDetection ejects an endpoint whose requests keep failing while its metrics still
	// answer (endpoints.Outlier; Envoy's defaults).
	OutlierDetection OutlierDetection `yaml:"outlierDetection"`
}

// Kubernetes discovers endpoints in the cluster the router runs in: the ready pods of an
// InferencePool, or of a label selector on a target port. Exactly one of InferencePool and
// Selector; TargetPort goes with Selector only (a pool names its ports).
type Kubernetes struct {
	// Namespace holds the pods and the pool (default: the router's own, from its service
	// account, else "default").
	Namespace string `yaml:"namespace"`
	// InferencePool names an InferencePool (inference.networking.k8s.io/v1) of the namespace:
	// its spec.selector picks the pods, its spec.targetPorts are their ports; changes are followed.
	InferencePool string `yaml:"inferencePool"`
	// Selector picks the pods by their labels (matchLabels).
	Selector map[string]string `yaml:"selector"`
	// TargetPort is the selected pods' port: a number, or a container port's name.
	TargetPort PortRef `yaml:"targetPort"`
	// Kubeconfig, when set, is a kubeconfig file (relative to the config file's directory unless
	// absolute) whose current context is used instead of the pod's service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// KVEventsPort, when set, is the port (a number or a container port's name) on which every
	// discovered pod's engine publishes its KV-cache events: tcp://podIP:port. A pod's
	// foresight.io/kv-events annotation (a port, or a whole address) overrides it, and names
	// the publisher of a pod when this is not set. Needs the kvEvents section.
	KVEventsPort PortRef `yaml:"kvEventsPort"`
}

// PortRef is a port by number (YAML 8000) or by the name of a container port (YAML http),
// resolved per pod as a Service's targetPort is. The zero value is no port.
type PortRef struct {
	Number int
	Name   string
}

// IsZero reports whether no port is given.
func (p PortRef) IsZero() bool { return p.Number == 0 && p.Name == "" }

// String is the port as the file spells it.
func (p PortRef) String() string {
	if p.Name != "" {
		return p.Name
	}
	return strconv.Itoa(p.Number)
}

// OutlierDetection is endpoints.Outlier as the config file spells it.
type OutlierDetection struct {
	ConsecutiveFailures int           `yaml:"consecutiveFailures"`
	BaseEjectionTime    time.Duration `yaml:"baseEjectionTime"`
	MaxEjectionTime     time.Duration `yaml:"maxEjectionTime"`
	MaxEjectionPercent  int           `yaml:"maxEjectionPercent"`
	Disabled            bool          `yaml:"disabled"`
}

// Outlier returns the section as the endpoint set takes it.
func (o OutlierDetection) Outlier() endpoints.Outlier {
	return endpoints.Outlier{ConsecutiveFailures: o.ConsecutiveFailures, BaseEjectionTime: o.BaseEjectionTime,
		MaxEjectionTime: o.MaxEjectionTime, MaxEjectionPercent: o.MaxEjectionPercent, Disabled: o.Disabled}
}

// EndpointSpec is one model server.
type EndpointSpec struct {
	// ID names the endpoint (default: its address).
	ID string `yaml:"id"`
	// Address is host:port, or a base URL (http://host:port, https://…).
	Address string            `yaml:"address"`
	Labels  map[string]string `yaml:"labels"`
	// KVEvents is the engine's KV-cache event publisher, tcp://host:port or ipc://path (needs
	// the kvEvents section); KVEventsReplay its replay socket. Both optional.
	KVEvents       string `yaml:"kvEvents"`
	KVEventsReplay string `yaml:"kvEventsReplay"`
}

// Scrape configures reading the engines' Prometheus metrics.
type Scrape struct {
	// Interval is the scrape period (default 50ms).
	Interval time.Duration `yaml:"interval"`
	// Engine picks the metric names: vllm (default) or sglang.
	Engine string `yaml:"engine"`
	// Metrics overrides single names of the engine's defaults.
	Metrics MetricNames `yaml:"metrics"`
}

// MetricNames overrides the engine metric names the router reads; empty fields keep the defaults.
type MetricNames struct {
	Waiting      string `yaml:"waiting"`
	Running      string `yaml:"running"`
	KVCacheUsage string `yaml:"kvCacheUsage"`
	CacheConfig  string `yaml:"cacheConfig"`
}

// Objective maps the value of the x-llm-d-inference-objective header to a priority.
type Objective struct {
	Name string `yaml:"name"`
	// Priority below zero makes the request sheddable; zero and above must be served.
	Priority int32 `yaml:"priority"`
}

// Router defaults.
const (
	DefaultListen                = "127.0.0.1:8080"
	DefaultAdminListen           = "127.0.0.1:9090"
	DefaultMaxBodyBytes          = 4 << 20
	DefaultUpstreamTimeout       = 10 * time.Minute
	DefaultConnectTimeout        = 2 * time.Second
	DefaultFirstByteTimeout      = time.Minute
	DefaultMaxAttempts           = 3
	DefaultDecisions             = 256
	DefaultMaxConcurrentRequests = 10000
	DefaultMaxHeaderBytes        = 60 << 10
	DefaultMaxHeaders            = 100
	DefaultReadHeaderTimeout     = 10 * time.Second
	DefaultReadBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout           = 120 * time.Second
	DefaultShutdownGrace         = 25 * time.Second
	DefaultPrefixBlocks          = 1 << 16
	DefaultScrapeInterval        = 50 * time.Millisecond
	DefaultEngine                = "vllm"
)

// The values of server.extProcDestination and server.unknownModels.
const (
	DestinationSingle   = "single"
	DestinationList     = "list"
	UnknownModelsRoute  = "route"
	UnknownModelsRefuse = "refuse"
)

func (c *Config) applyRouterDefaults() {
	s := &c.Server
	s.Listen = cmp.Or(s.Listen, DefaultListen)
	s.AdminListen = cmp.Or(s.AdminListen, DefaultAdminListen)
	s.MaxBodyBytes = cmp.Or(s.MaxBodyBytes, DefaultMaxBodyBytes)
	s.UpstreamTimeout = cmp.Or(s.UpstreamTimeout, DefaultUpstreamTimeout)
	s.ConnectTimeout = cmp.Or(s.ConnectTimeout, DefaultConnectTimeout)
	s.FirstByteTimeout = cmp.Or(s.FirstByteTimeout, DefaultFirstByteTimeout)
	s.MaxAttempts = cmp.Or(s.MaxAttempts, DefaultMaxAttempts)
	s.ExtProcDestination = cmp.Or(s.ExtProcDestination, DestinationSingle)
	s.Decisions = cmp.Or(s.Decisions, DefaultDecisions)
	s.MaxConcurrentRequests = cmp.Or(s.MaxConcurrentRequests, DefaultMaxConcurrentRequests)
	s.MaxHeaderBytes = cmp.Or(s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	s.MaxHeaders = cmp.Or(s.MaxHeaders, DefaultMaxHeaders)
	s.ReadHeaderTimeout = cmp.Or(s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	s.ReadBodyTimeout = cmp.Or(s.ReadBodyTimeout, DefaultReadBodyTimeout)
	s.IdleTimeout = cmp.Or(s.IdleTimeout, DefaultIdleTimeout)
	s.ShutdownGrace = cmp.Or(s.ShutdownGrace, DefaultShutdownGrace)
	s.PrefixIndexBlocks = cmp.Or(s.PrefixIndexBlocks, DefaultPrefixBlocks)
	c.Scrape.Interval = cmp.Or(c.Scrape.Interval, DefaultScrapeInterval)
	c.Scrape.Engine = cmp.Or(c.Scrape.Engine, DefaultEngine)
	od := &c.Endpoints.OutlierDetection
	od.ConsecutiveFailures = cmp.Or(od.ConsecutiveFailures, endpoints.DefaultConsecutiveFailures)
	od.BaseEjectionTime = cmp.Or(od.BaseEjectionTime, endpoints.DefaultBaseEjectionTime)
	od.MaxEjectionTime = cmp.Or(od.MaxEjectionTime, endpoints.DefaultMaxEjectionTime)
	od.MaxEjectionPercent = cmp.Or(od.MaxEjectionPercent, endpoints.DefaultMaxEjectionPercent)
	for i := range c.Endpoints.Static {
		if e := &c.Endpoints.Static[i]; e.ID == "" {
			e.ID = e.Address
		}
	}
}

// AdminTokenEnv is the environment variable that holds the admin token (over server.adminToken).
const AdminTokenEnv = "FORESIGHT_ADMIN_TOKEN"

// AdminToken returns the admin API's bearer token: $FORESIGHT_ADMIN_TOKEN, else server.adminToken;
// "" when neither is set.
func (c *Config) AdminToken() string {
	if t := os.Getenv(AdminTokenEnv); t != "" {
		return t
	}
	return c.Server.AdminToken
}

// CheckAdminAccess refuses an admin listener reachable from other hosts without a token: one
// that binds anything but a loopback address (127.0.0.0/8, ::1, localhost) needs AdminToken. It
// also refuses a token from the environment that is too short or not printable (tokens.go).
func (c *Config) CheckAdminAccess() error {
	if err := c.checkEnvTokens(); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(c.Server.AdminListen)
	if err != nil {
		return fmt.Errorf("server.adminListen %q is not host:port: %w", c.Server.AdminListen, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	if c.AdminToken() == "" {
		return fmt.Errorf("server.adminListen %s is reachable from other hosts, so the admin API needs a token: "+
			"set server.adminToken or $%s, or bind a loopback address", c.Server.AdminListen, AdminTokenEnv)
	}
	return nil
}

// ValidateRouter checks the router's sections; Parse does, and a caller that changes them
// afterwards (serve's flags) does again.
func (c *Config) ValidateRouter() error {
	s := &c.Server
	for _, l := range []struct{ field, addr string }{{"listen", s.Listen}, {"adminListen", s.AdminListen}, {"extProcListen", s.ExtProcListen}} {
		if l.addr == "" && l.field == "extProcListen" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			return c.errorAt([]any{"server", l.field}, "%q is not host:port: %v", l.addr, err)
		}
	}
	positive := []struct {
		field string
		ok    bool
	}{
		{"maxBodyBytes", s.MaxBodyBytes > 0}, {"upstreamTimeout", s.UpstreamTimeout > 0},
		{"connectTimeout", s.ConnectTimeout > 0}, {"firstByteTimeout", s.FirstByteTimeout > 0},
		{"maxAttempts", s.MaxAttempts > 0}, {"decisions", s.Decisions > 0},
		{"maxConcurrentRequests", s.MaxConcurrentRequests > 0}, {"maxHeaderBytes", s.MaxHeaderBytes > 0},
		{"maxHeaders", s.MaxHeaders > 0}, {"readHeaderTimeout", s.ReadHeaderTimeout > 0},
		{"readBodyTimeout", s.ReadBodyTimeout > 0}, {"idleTimeout", s.IdleTimeout > 0},
		{"prefixIndexBlocks", s.PrefixIndexBlocks > 0},
		{"shutdownGrace", s.ShutdownGrace > 0},
	}
	for _, p := range positive {
		if !p.ok {
			return c.errorAt([]any{"server", p.field}, "must be positive")
		}
	}
	if s.MaxInflightPerEndpoint < 0 {
		return c.errorAt([]any{"server", "maxInflightPerEndpoint"}, "must not be negative (0: no bound), got %d", s.MaxInflightPerEndpoint)
	}
	if s.DecisionConcurrency < 0 {
		return c.errorAt([]any{"server", "decisionConcurrency"}, "must not be negative (0: twice the endpoints), got %d", s.DecisionConcurrency)
	}
	if s.StreamFlushInterval < 0 {
		return c.errorAt([]any{"server", "streamFlushInterval"}, "must not be negative, got %v", s.StreamFlushInterval)
	}
	if d := s.ExtProcDestination; d != DestinationSingle && d != DestinationList {
		return c.errorAt([]any{"server", "extProcDestination"}, "%q is not a destination form: single (one endpoint) or list (the picks, comma-separated)", d)
	}
	if u := s.UnknownModels; u != "" && u != UnknownModelsRoute && u != UnknownModelsRefuse {
		return c.errorAt([]any{"server", "unknownModels"}, "%q is not a choice: route (to any endpoint in the rotation) or refuse (404 model_not_found)", u)
	}
	if err := c.validateTokens(); err != nil {
		return err
	}
	if c.Scrape.Interval < time.Millisecond {
		return c.errorAt([]any{"scrape", "interval"}, "must be at least 1ms, got %v", c.Scrape.Interval)
	}
	if e := c.Scrape.Engine; e != "vllm" && e != "sglang" {
		return c.errorAt([]any{"scrape", "engine"}, "%q is not an engine: vllm or sglang", e)
	}
	if _, err := c.Endpoints.OutlierDetection.Outlier().WithDefaults(); err != nil {
		return c.errorAt([]any{"endpoints", "outlierDetection"}, "%v", err)
	}
	ids := map[string]int{}
	for i, e := range c.Endpoints.Static {
		if err := endpoints.ValidateAddress(e.Address); err != nil {
			return c.errorAt([]any{"endpoints", "static", i, "address"}, "%v", err)
		}
		if j, dup := ids[e.ID]; dup {
			return c.errorAt([]any{"endpoints", "static", i, "id"}, "%q is also endpoint %d's id", e.ID, j)
		}
		ids[e.ID] = i
	}
	if err := c.validateKubernetes(); err != nil {
		return err
	}
	names := map[string]int{}
	for i, o := range c.Objectives {
		if o.Name == "" {
			return c.errorAt([]any{"objectives", i, "name"}, "is required")
		}
		if j, dup := names[o.Name]; dup {
			return c.errorAt([]any{"objectives", i, "name"}, "%q is also objective %d's name", o.Name, j)
		}
		names[o.Name] = i
	}
	return nil
}

// EndpointsFile returns the endpoints file resolved against the config file's directory, or "".
func (c *Config) EndpointsFile() string {
	if c.Endpoints.File == "" {
		return ""
	}
	return sdk.ResolvePathIn(c.Dir(), c.Endpoints.File)
}

// KubeconfigFile returns endpoints.kubernetes.kubeconfig resolved against the config file's
// directory, or "" (the in-cluster configuration).
func (c *Config) KubeconfigFile() string {
	if c.Endpoints.Kubernetes == nil || c.Endpoints.Kubernetes.Kubeconfig == "" {
		return ""
	}
	return sdk.ResolvePathIn(c.Dir(), c.Endpoints.Kubernetes.Kubeconfig)
}

// Priority returns the priority of the objective called name.
func (c *Config) Priority(name string) (int32, bool) {
	for _, o := range c.Objectives {
		if o.Name == name {
			return o.Priority, true
		}
	}
	return 0, false
}
