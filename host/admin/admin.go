// Package admin serves the router's admin listener: its observability
//
//	GET  /metrics                Prometheus text: the router's, the stages' and the predictor's metrics
//	GET  /debug/decisions        the last decision traces, oldest first, as a JSON array
//	GET  /health                 200 while the listener is up
//	GET  /dashboard              a live page of the router's state (dashboard.html; it holds no data
//	                             itself and reads GET /admin/dashboard.json with the token)
//
// and its control API:
//
//	POST /admin/reload           rebuild the pipeline from the config file and swap it in
//	PUT  /admin/stages/{slot}    serve one slot with another plugin, without editing the file;
//	                             ?profile=NAME picks the scheduling profile (default: the default one)
//	GET  /admin/pipeline         profiles, slots, plugins, versions, pids, restarts
//	GET  /admin/experiments      the experiment's arms and their comparison
//	GET  /admin/dashboard.json   what the dashboard draws (Dashboard)
//
// With the admin token, every request but GET /health and GET /dashboard must carry
// "Authorization: Bearer TOKEN"; the read-only token opens the GET routes that change nothing
// (access.go). Without a token for a route, it answers only this machine's own requests: from a
// loopback address, with a loopback Host, and no other site's Origin. The page takes the token
// from its URL's fragment (/dashboard#token=TOKEN), which browsers never send, so it stays out
// of access logs and proxies.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/config"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Control is what the API acts on: the router, which logs and counts every reload.
type Control interface {
	// Reload rebuilds the pipeline from the config file; source says who asked, for the log.
	Reload(ctx context.Context, source string) (Result, error)
	// SwapStage serves slot of profile ("": the default profile) with spec (config.Config.WithStage).
	SwapStage(ctx context.Context, profile, slot string, spec config.PluginSpec, weight *float64) (Result, error)
	// Describe is GET /admin/pipeline's answer.
	Describe() Description
	// Experiments is GET /admin/experiments' answer; ok is false when no slot has arms.
	Experiments() (report any, ok bool)
}

// Options configure the handler.
type Options struct {
	Control Control
	// Metrics is what GET /metrics serves.
	Metrics prometheus.Gatherer
	// Decisions returns the decision traces GET /debug/decisions serves.
	Decisions func() []*pipeline.Trace
	// Samples and Events are the dashboard's memories of recent latency pairs and pipeline
	// events; nil shows them empty.
	Samples *Samples
	Events  *Events
	// Token, when not empty, is the admin token: the bearer token required on every request but
	// GET /health and GET /dashboard.
	Token string
	// ReadToken, when not empty, is the read-only token, which opens the routes that change
	// nothing (GET /metrics, /debug/decisions, /admin/pipeline, /admin/experiments,
	// /admin/dashboard.json).
	ReadToken string
}

// maxBodyBytes bounds a request body of the API.
const maxBodyBytes = 1 << 20

// Handler returns the admin listener's handler.
func Handler(o Options) http.Handler {
	mux := openai.NewMux()
	mux.HandleFunc(http.MethodPost, "/admin/reload", func(w http.ResponseWriter, r *http.Request) {
		res, err := o.Control.Reload(r.Context(), "POST /admin/reload")
		answer(w, res, err)
	})
	mux.HandleFunc(http.MethodPut, "/admin/stages/{slot}", func(w http.ResponseWriter, r *http.Request) {
		spec, weight, err := decodeStage(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			openai.WriteError(w, openai.BadRequest("", "%v", err))
			return
		}
		res, err := o.Control.SwapStage(r.Context(), r.URL.Query().Get("profile"), r.PathValue("slot"), spec, weight)
		answer(w, res, err)
	})
	mux.HandleFunc(http.MethodGet, "/admin/pipeline", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, o.Control.Describe())
	})
	mux.HandleFunc(http.MethodGet, "/admin/experiments", func(w http.ResponseWriter, _ *http.Request) {
		rep, ok := o.Control.Experiments()
		if !ok {
			openai.WriteError(w, &openai.Error{Status: http.StatusNotFound, Type: openai.TypeInvalidRequest,
				Message: "no experiment: no pipeline slot declares arms or a shadow"})
			return
		}
		writeJSON(w, http.StatusOK, rep)
	})
	mux.Handle(http.MethodGet, "/metrics", promhttp.HandlerFor(o.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc(http.MethodGet, "/debug/decisions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, o.Decisions())
	})
	mux.HandleFunc(http.MethodGet, "/admin/dashboard.json", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, dashboard(o))
	})
	mux.HandleFunc(http.MethodGet, "/dashboard", servePage)
	mux.HandleFunc(http.MethodGet, "/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return guard(o.Token, o.ReadToken, mux)
}

// stageBody is PUT /admin/stages/{slot}'s body: a plugin declaration as in the config file's
// plugins list (JSON field names as the YAML's), plus the slot's scorer weight.
type stageBody struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Path       string            `json:"path"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	SHA256     string            `json:"sha256"`
	Version    string            `json:"version"`
	Timeout    string            `json:"timeout"` // a Go duration, e.g. "25ms"
	Parameters map[string]any    `json:"parameters"`
	Weight     *float64          `json:"weight"`
}

func decodeStage(r io.Reader) (config.PluginSpec, *float64, error) {
	var b stageBody
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return config.PluginSpec{}, nil, fmt.Errorf("the body must be a JSON plugin declaration "+
			`{"type":…, "path":…, "parameters":{…}, "name":…, "weight":…}: %v`, err)
	}
	spec := config.PluginSpec{Name: b.Name, Type: b.Type, Path: b.Path, Args: b.Args, Env: b.Env,
		SHA256: b.SHA256, Version: b.Version, Parameters: b.Parameters}
	if b.Timeout != "" {
		d, err := time.ParseDuration(b.Timeout)
		if err != nil {
			return spec, nil, fmt.Errorf("timeout %q is not a duration such as \"25ms\"", b.Timeout)
		}
		spec.Timeout = d
	}
	return spec, b.Weight, nil
}

// answer writes a reload's result, or its failure as 404 (no such slot or profile) or 422 (the new pipeline
// could not be built: the old one serves on).
func answer(w http.ResponseWriter, res Result, err error) {
	if err == nil {
		writeJSON(w, http.StatusOK, res)
		return
	}
	status := http.StatusUnprocessableEntity
	if errors.Is(err, config.ErrNoSlot) || errors.Is(err, config.ErrNoProfile) {
		status = http.StatusNotFound
	} else if errors.Is(err, ErrShuttingDown) {
		status = http.StatusServiceUnavailable
	}
	openai.WriteError(w, &openai.Error{Status: status, Type: openai.TypeInvalidRequest, Code: "reload_failed",
		Message: "reload failed; the previous pipeline keeps serving: " + strings.TrimSpace(err.Error())})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
