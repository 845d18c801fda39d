// Package router assembles the live router from its configuration: the endpoint set and its
// scrapers, the pipeline and its plugin processes, the producer's sample batcher, the metrics, and
// the OpenAI and admin listeners. foresight serve runs one; the demo and the end-to-end tests
// start one beside an emulated fleet.
package router

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/feedback"

	"github.com/foresight-router/foresight/host/metrics"
	"github.com/foresight-router/foresight/host/proxy"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
)

// Router is a running router. Close stops it.
type Router struct {
	api, admin         *http.Server
	apiAddr, adminAddr string
	srv                *proxy.Server
	kv                 *kvEvents // the endpoints' KV-cache event subscribers (kvevents.go)
	ext                *extProc  // nil when server.extProcListen is off
	pipes              *Pipelines
	file               string             // the config file reloads read
	flow               config.FlowControl // the flowControl section as started: a reload does not change it
	reloads            *metrics.Reloads
	events             *admin.Events // the dashboard's timeline of starts, reloads, swaps and restarts
	state              *state        // the state plane; nil without a state section
	log                zerolog.Logger
	cancel             context.CancelFunc
	wg                 sync.WaitGroup
	closeOnce          sync.Once
	grace              time.Duration // server.shutdownGrace
	// requests is the HTTP listeners' base context, which every request's derives from;
	// stopRequests cancels it when the shutdown grace ends (shutdown.go), once (cutOnce).
	requests     context.Context
	stopRequests context.CancelCauseFunc
	cutOnce      sync.Once
}

// Start builds and starts the router of cfg. It returns once both listeners accept connections;
// on error nothing is left running. It reloads the pipeline when cfg's file changes (and on
// Reload: SIGHUP, POST /admin/reload). With endpoints.kubernetes it first waits for the pods'
// list (discovery.go).
func Start(ctx context.Context, cfg *config.Config, log zerolog.Logger, opts ...Option) (_ *Router, err error) {
	if err := cfg.CheckAdminAccess(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File(), err)
	}
	list, err := endpointList(cfg)
	if err != nil {
		return nil, err
	}
	names, err := metricNames(cfg.Scrape)
	if err != nil {
		return nil, err
	}
	set, err := endpoints.New(endpoints.Config{Interval: cfg.Scrape.Interval, Names: names,
		Outlier: cfg.Endpoints.OutlierDetection.Outlier(), Log: log}, list)
	if err != nil {
		return nil, fmt.Errorf("%s: endpoints: %w", cfg.File(), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Router{cancel: cancel, file: cfg.File(), flow: cfg.FlowControl, log: log, events: admin.NewEvents(0), grace: cfg.Server.ShutdownGrace}
	r.requests, r.stopRequests = context.WithCancelCause(context.Background())
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.state, err = startState(cfg); err != nil {
		return nil, err
	}
	r.state.pluginEnv(cfg)
	r.pipes, err = StartPipelines(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reqs, err := metrics.NewRequests(reg)
	if err != nil {
		return nil, err
	}
	stages, err := metrics.NewStages(reg, r.pipes.Plugins)
	if err != nil {
		return nil, err
	}
	if _, err := metrics.NewDeadlines(reg, r.pipes.Stats); err != nil {
		return nil, err
	}
	if r.reloads, err = metrics.NewReloads(reg); err != nil {
		return nil, err
	}
	// Samples flow whatever the pipeline: a reload may add or remove the producer. Without one
	// they count as failed (foresight_predictor_samples_total{result="failed"}).
	samples := feedback.New(r.pipes.Observe, 0, 0)
	recent := admin.NewSamples(0)
	samples.Tap(recent.Add)
	reg.MustRegister(metrics.NewPredictor(samples.Counts))
	r.goRun(func() { samples.Run(ctx) })
	objectives := make([]string, 0, len(cfg.Objectives))
	for _, o := range cfg.Objectives {
		objectives = append(objectives, o.Name)
	}
	// The gauges read the proxy's endpoint states and ledger at scrape time; r.srv is set below,
	// before either listener serves.
	perEndpoint, err := metrics.NewEndpoints(reg, func() []metrics.EndpointGauges { return r.srv.EndpointGauges() })
	if err != nil {
		return nil, err
	}
	// Flow control's metrics exist only when it is on: off, /metrics is what it was without it.
	var flowMetrics *metrics.FlowControl
	if cfg.FlowControl.Enabled {
		if flowMetrics, err = metrics.NewFlowControl(reg); err != nil {
			return nil, err
		}
	}
	watcher, err := r.newWatcher(cfg, opts)
	if err != nil {
		return nil, err
	}
	r.kv = newKVEvents(cfg.KVEvents, set, cfg.Server.PrefixIndexBlocks, log)
	if r.kv.index != nil {
		if err := metrics.NewKVEvents(reg, r.kv.stats, r.kv.tokenized); err != nil {
			return nil, err
		}
	}
	var plane *stateplane.Plane
	if r.state != nil {
		stateMetrics, err := metrics.NewState(reg, r.state.stats)
		if err != nil {
			return nil, err
		}
		if err := r.state.connect(set.Config().Now, stateMetrics.Observe, log); err != nil {
			return nil, err
		}
		plane = r.state.plane
	}
	r.srv, err = proxy.New(proxy.Options{Pipeline: r.pipes, FlowControl: &cfg.FlowControl, Disaggregation: cfg.Disaggregation, FlowMetrics: flowMetrics, Outcomes: r.pipes, Endpoints: set, Samples: samples,
		Priority: priority(cfg, watcher), ModelRewrite: modelRewrite(cfg, watcher), Objectives: objectives, MaxBodyBytes: cfg.Server.MaxBodyBytes, ReadBodyTimeout: cfg.Server.ReadBodyTimeout,
		MaxConcurrentRequests: cfg.Server.MaxConcurrentRequests, MaxInflightPerEndpoint: cfg.Server.MaxInflightPerEndpoint,
		MaxHeaders: cfg.Server.MaxHeaders, MaxHeaderBytes: cfg.Server.MaxHeaderBytes,
		ConnectTimeout: cfg.Server.ConnectTimeout, UpstreamTimeout: cfg.Server.UpstreamTimeout,
		FirstByteTimeout: cfg.Server.FirstByteTimeout, MaxAttempts: cfg.Server.MaxAttempts, UnknownModels: cfg.Server.UnknownModels,
		Decisions: cfg.Server.Decisions, PrefixBlocks: cfg.Server.PrefixIndexBlocks, DecisionConcurrency: cfg.Server.DecisionConcurrency,
		StreamFlushInterval: cfg.Server.StreamFlushInterval, Metrics: reqs, Stages: stages, EndpointMetrics: perEndpoint, State: plane,
		KVEvents: r.kv.index, Tokenize: r.kv.tokens(), Log: log})
	if err != nil {
		return nil, err
	}
	r.goRun(func() { set.Run(ctx) })
	r.goRun(func() { r.kv.run(ctx, set) })
	if err := r.discover(ctx, cfg, watcher, set); err != nil {
		return nil, err
	}
	if file := cfg.EndpointsFile(); file != "" {
		static := staticEndpoints(cfg)
		r.goRun(func() {
			_ = endpoints.Watch(ctx, file, func(eps []endpoints.Endpoint) {
				if err := set.Update(append(slices.Clone(static), eps...)); err != nil {
					log.Error().Err(err).Str("file", file).Msg("endpoints file rejected; the old list stays")
					return
				}
				r.srv.Prune()
				log.Info().Str("file", file).Int("endpoints", len(static)+len(eps)).Msg("endpoints reloaded")
			}, func(err error) {
				log.Error().Err(err).Str("file", file).Msg("endpoints file rejected; the old list stays")
			})
		})
	}
	if r.api, r.apiAddr, err = r.listen(cfg.Server.Listen, r.srv, cfg.Server); err != nil {
		return nil, err
	}
	if file := cfg.File(); file != "" {
		r.goRun(func() { r.watchConfig(ctx, file) })
	}
	if cfg.Server.ExtProcListen != "" {
		if err := r.startExtProc(cfg.Server); err != nil {
			return nil, err
		}
	}
	r.goRun(func() { r.watchRestarts(ctx) })
	adminHandler := admin.Handler(admin.Options{Control: r, Metrics: reg, Decisions: r.srv.Decisions,
		Samples: recent, Events: r.events, Token: cfg.AdminToken(), ReadToken: cfg.ReadToken()})
	if r.admin, r.adminAddr, err = r.listen(cfg.Server.AdminListen, adminHandler, cfg.Server); err != nil {
		return nil, err
	}
	r.markReady()
	r.events.Add(admin.Event{At: time.Now().UTC(), Kind: admin.EventStart, OK: true, Source: cfg.File(), Generation: r.pipes.Describe().Generation})
	return r, nil
}

// Addr is the OpenAI API's address; AdminAddr the admin listener's.
func (r *Router) Addr() string      { return r.apiAddr }
func (r *Router) AdminAddr() string { return r.adminAddr }

// Server returns the request handler (decision traces, for tests and the demo).
func (r *Router) Server() *proxy.Server { return r.srv }

// Close stops accepting requests, lets those in flight finish (up to server.shutdownGrace; the
// ones left then end with the router's 503, shutdown.go), stops the scrapers and the plugin
// processes. It is safe to call more than once.
func (r *Router) Close() {
	r.closeOnce.Do(func() {
		r.drain()
		r.stopRequests(nil)
		r.cancel()
		r.wg.Wait() // the batcher flushes its last samples before the pipeline stops
		if r.srv != nil {
			r.srv.Close()
		}
		r.state.closePlane()
		if r.pipes != nil {
			r.pipes.Close()
		}
		r.state.closeServer() // after the plugins, which may share samples through it
	})
}

func (r *Router) goRun(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// listen binds addr and serves h on it, with the connection bounds of c: slow or idle clients
// are cut off, and a header section over twice server.maxHeaderBytes is refused by net/http
// itself (431, plain text) before the handler's own check (431, OpenAI's shape) sees it.
func (r *Router) listen(addr string, h http.Handler, c config.Server) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: c.ReadHeaderTimeout, IdleTimeout: c.IdleTimeout, MaxHeaderBytes: 2 * c.MaxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return r.requests }}
	r.goRun(func() { _ = s.Serve(ln) }) // ErrServerClosed after Shutdown
	return s, ln.Addr().String(), nil
}

// endpointList is the static endpoints followed by the file's.
func endpointList(cfg *config.Config) ([]endpoints.Endpoint, error) {
	list := staticEndpoints(cfg)
	if file := cfg.EndpointsFile(); file != "" {
		more, err := endpoints.LoadFile(file)
		if err != nil {
			return nil, err
		}
		list = append(list, more...)
	}
	if len(list) == 0 && cfg.Endpoints.Kubernetes == nil { // discovered pods may scale from zero
		return nil, fmt.Errorf("%s: no endpoints: list them under endpoints.static or in endpoints.file", cfg.File())
	}
	return list, nil
}

func staticEndpoints(cfg *config.Config) []endpoints.Endpoint {
	out := make([]endpoints.Endpoint, 0, len(cfg.Endpoints.Static))
	for _, e := range cfg.Endpoints.Static {
		out = append(out, endpoints.Endpoint{ID: e.ID, Address: e.Address, Labels: e.Labels, KVEvents: e.KVEvents, KVEventsReplay: e.KVEventsReplay})
	}
	return out
}

// metricNames are the engine's default names with the configured overrides.
func metricNames(s config.Scrape) (endpoints.MetricNames, error) {
	n, err := endpoints.Names(s.Engine)
	if err != nil {
		return n, err
	}
	if s.Metrics.KVCacheUsage != "" {
		n.KVCacheUsageFallback = "" // the operator named the metric: no guessing
	}
	for _, o := range []struct {
		dst *string
		v   string
	}{
		{&n.Waiting, s.Metrics.Waiting}, {&n.Running, s.Metrics.Running},
		{&n.KVCacheUsage, s.Metrics.KVCacheUsage}, {&n.CacheConfig, s.Metrics.CacheConfig},
	} {
		if o.v != "" {
			*o.dst = o.v
		}
	}
	return n, nil
}
