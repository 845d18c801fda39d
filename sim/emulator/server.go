// Package emulator serves simulated vLLM engines over HTTP in real time: each Server wraps one
// sim/engine model behind vLLM's OpenAI-compatible endpoints and its Prometheus metrics, so that
// a router can be tested against a fleet of fake servers on loopback. README.md lists the
// endpoints, the tokenization heuristic, the metrics and what is simplified.
package emulator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/host/kvevents"
	"github.com/foresight-router/foresight/sim/engine"
)

// DefaultModel is the model name the emulator serves and reports.
const DefaultModel = "meta-llama/Llama-3.1-8B-Instruct"

// idleRetry is how long the engine loop waits before retrying after a step that scheduled
// nothing while requests were queued, so that it never spins.
const idleRetry = time.Millisecond

// errClosed is returned to requests arriving at, or waiting on, a closed server.
var errClosed = errors.New("server closed")

// Server runs one engine in real time. A single goroutine owns the engine: it adds arrivals at
// the time since the server started, sleeps until NextStep, runs Step and hands each event to
// its request, whose handler then waits until the event's Time before writing it. Server is safe
// for concurrent use.
type Server struct {
	model       string
	block       int // KV block size, for block hashes
	numBlocks   int // KV cache capacity in blocks, for the block ids a prefill answer names
	maxModelLen int // the engine's, which /tokenize reports
	start       time.Time
	arrivals    chan arrival
	aborts      chan uint64 // requests whose client went away
	done        chan struct{}
	stopped     chan struct{}
	close       sync.Once
	nextID      atomic.Uint64

	mu       sync.Mutex
	metrics  engine.Metrics // snapshot after the last Add or Step
	finished int64          // requests the engine finished, as of the same snapshot
	pooled   int64          // of those, prefill-only (embeddings) requests
	pd       PDStats        // disaggregated requests accepted (PD)

	eng   engine.Engine    // owned by run
	sinks map[uint64]*sink // owned by run

	// KV-cache events (kvevents.go): WithKVEvents' ports, the publisher, and run's buffers.
	kvEvents bool
	kvPorts  [2]int
	kvPub    *kvevents.Publisher
	kvLog    []engine.CacheEvent
	kvBatch  kvevents.Batch
	kvErrors atomic.Int64           // batches the publisher failed to send
	cost     CPUCost                // burnt by run for each step (WithCPUCost)
	edits    []func(*engine.Config) // applied to the engine's configuration (WithKVTransferLatency, …)
}

type arrival struct {
	req  engine.Request
	sink *sink
	err  chan error
}

// NewServer starts a server running an engine with cfg and serving the model name model
// (DefaultModel when empty), with opts. Close stops it.
func NewServer(cfg engine.Config, model string, opts ...Option) (*Server, error) {
	s := &Server{
		model:    cmp.Or(model, DefaultModel),
		arrivals: make(chan arrival),
		aborts:   make(chan uint64),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
		sinks:    make(map[uint64]*sink),
	}
	for _, o := range opts {
		o(s)
	}
	for _, edit := range s.edits {
		edit(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating engine: %w", err)
	}
	s.eng, s.metrics, s.block, s.numBlocks, s.maxModelLen = eng, eng.Metrics(), cfg.BlockSize, cfg.NumGPUBlocks, cfg.MaxModelLen
	if err := s.startKVEvents(); err != nil {
		return nil, err
	}
	s.start = time.Now()
	go s.run()
	return s, nil
}

// Close stops the engine loop; requests in flight end with an error. It is idempotent.
func (s *Server) Close() {
	s.close.Do(func() { close(s.done) })
	<-s.stopped
}

// Metrics returns the engine's metrics as of its last step or arrival.
func (s *Server) Metrics() engine.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metrics
}

// finishedByReason returns how many requests the engine has finished (vllm:request_success_total),
// as of its last step — every finish, whether or not its client was still there to read it —
// split as the metric's finished_reason does:
// a pooling (embeddings) request stops as soon as its prompt is computed ("stop"); every other
// request generates its whole output ("length").
func (s *Server) finishedByReason() (stop, length int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pooled, s.finished - s.pooled
}

// Handler returns the HTTP handler serving the OpenAI-compatible API, /health and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	return mux
}

func (s *Server) elapsed() time.Duration { return time.Since(s.start) }

// run is the engine's owner loop.
func (s *Server) run() {
	defer close(s.stopped)
	if s.kvPub != nil {
		defer s.kvPub.Close() // the loop is its only publisher
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	notBefore := time.Duration(0) // set after an empty step to avoid spinning
	finished, pooled := int64(0), int64(0)
	var work time.Duration // CPU the last step costs (WithCPUCost)
	for {
		var wake <-chan time.Time
		if next := s.eng.NextStep(); next >= 0 {
			timer.Reset(max(next, notBefore) - s.elapsed())
			wake = timer.C
		}
		select {
		case <-s.done:
			timer.Stop()
			return
		case id := <-s.aborts:
			timer.Stop()
			s.eng.Abort(id)
			delete(s.sinks, id)
		case a := <-s.arrivals:
			timer.Stop()
			err := s.eng.Add(a.req, s.elapsed())
			if err == nil {
				s.sinks[a.req.ID] = a.sink
			}
			a.err <- err
		case <-wake:
			res := s.eng.Step(s.elapsed())
			s.publishCacheEvents()
			work = s.cost.of(res.PrefillTokens, outputTokens(res.Events))
			for _, ev := range res.Events {
				k := s.sinks[ev.ID]
				if ev.Kind == engine.Finish {
					finished++
					if k != nil && k.pooling {
						pooled++
					}
				}
				if k == nil {
					continue
				}
				k.push(ev)
				if ev.Kind == engine.Finish {
					delete(s.sinks, ev.ID)
				}
			}
			notBefore = 0
			if next := s.eng.NextStep(); next >= 0 && next <= res.Start {
				// The step made no progress (a batch step that scheduled nothing): retry later.
				notBefore = s.elapsed() + idleRetry
			}
		}
		m := s.eng.Metrics()
		s.mu.Lock()
		s.metrics, s.finished, s.pooled = m, finished, pooled
		s.mu.Unlock()
		// The step's CPU, once its events are handed out and its metrics published: the handlers
		// wait for their events' times (the batch family's are at the step's end) while this
		// goroutine works.
		burn(work)
		work = 0
	}
}

// outputTokens counts the output tokens among a step's events.
func outputTokens(events []engine.Event) int {
	n := 0
	for _, ev := range events {
		if ev.Kind == engine.FirstToken || ev.Kind == engine.Token {
			n++
		}
	}
	return n
}

// sink is one request's unbounded event queue: the engine loop never blocks on a slow client.
type sink struct {
	tokens  []uint32 // the prompt's, for the KV-cache events of its blocks; set before the engine loop sees the sink
	mu      sync.Mutex
	events  []engine.Event
	ready   chan struct{} // capacity 1: "events may be waiting"
	pooling bool          // a prefill-only request; set before the engine loop sees the sink
}

func newSink(pooling bool) *sink { return &sink{ready: make(chan struct{}, 1), pooling: pooling} }

func (k *sink) push(ev engine.Event) {
	k.mu.Lock()
	k.events = append(k.events, ev)
	k.mu.Unlock()
	select {
	case k.ready <- struct{}{}:
	default:
	}
}

func (k *sink) take() []engine.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	evs := k.events
	k.events = nil
	return evs
}

// generation is what a finished request reports.
type generation struct {
	id                                           uint64
	promptTokens, completionTokens, cachedTokens int
}

// job is one request for the engine: its prompt, its output length, and whether its prompt's KV
// comes from a remote prefill server (the decode half of a disaggregated request).
type job struct {
	tokens        []uint32
	maxTokens     int
	remotePrefill bool
}

// generate submits j, calls onAdmit (when not nil) once the engine has accepted it, and calls
// onToken for each output token k (1-based) at the time the engine says the client sees it. It
// returns when the request finishes, ctx ends, a callback fails or the server closes. An error
// from Add (a request vLLM would reject) is returned as a *requestError, before any callback.
//
// j.maxTokens 0 is a prefill-only (pooling) request. The engine cannot run a request without
// output, so it asks for one token, which the engine samples at the end of the step computing
// the prompt's last token — when vLLM has a pooling request's result — and which is never passed
// to onToken: generate returns at that token's time.
func (s *Server) generate(ctx context.Context, j job, onAdmit func(id uint64) error, onToken func(id uint64, k int) error) (generation, error) {
	id := s.nextID.Add(1)
	tokens, maxTokens := j.tokens, j.maxTokens
	pooling := maxTokens == 0
	req := engine.Request{
		ID:            id,
		InputTokens:   len(tokens),
		OutputTokens:  max(maxTokens, 1),
		Blocks:        BlockHashes(tokens, s.block),
		RemotePrefill: j.remotePrefill,
	}
	k := newSink(pooling)
	k.tokens = tokens
	a := arrival{req: req, sink: k, err: make(chan error, 1)}
	select {
	case s.arrivals <- a:
	case <-s.done:
		return generation{}, errClosed
	case <-ctx.Done():
		return generation{}, ctx.Err()
	}
	if err := <-a.err; err != nil {
		return generation{}, &requestError{err: err}
	}
	gen := generation{id: id, promptTokens: len(tokens)}
	if onAdmit != nil {
		if err := onAdmit(id); err != nil {
			s.abort(id)
			return gen, err
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-k.ready:
		case <-s.done:
			return gen, errClosed
		case <-ctx.Done():
			s.abort(id)
			return gen, ctx.Err()
		}
		for _, ev := range k.take() {
			if ev.Kind == engine.Preempted {
				continue
			}
			if d := ev.Time - s.elapsed(); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-s.done:
					return gen, errClosed
				case <-ctx.Done():
					s.abort(id)
					return gen, ctx.Err()
				}
			}
			gen.cachedTokens = ev.CachedTokens
			if ev.Kind == engine.Finish {
				return gen, nil
			}
			if pooling {
				continue
			}
			gen.completionTokens = ev.Tokens
			if err := onToken(id, ev.Tokens); err != nil {
				s.abort(id)
				return gen, err
			}
		}
	}
}

// abort tells the engine loop that request id's client went away: vLLM aborts such a request
// and frees its blocks.
func (s *Server) abort(id uint64) {
	select {
	case s.aborts <- id:
	case <-s.done:
	}
}

// requestError is a request the engine refused; it becomes a 400.
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }
