package admin

import (
	"errors"
	"time"

	"github.com/foresight-router/foresight/host/pluginhost"
)

// ErrShuttingDown is the error a Control returns, or wraps, once the router is closing; the API
// answers it with 503.
var ErrShuttingDown = errors.New("the router is shutting down")

// Result describes a successful reload: the answer of POST /admin/reload and PUT /admin/stages/{slot}.
type Result struct {
	Generation int    `json:"generation"`
	Config     string `json:"config"`
	// Kept plugins were carried over running; Started were launched; Stopping are the old
	// pipeline's plugins the new one does not use, stopped once its cycles in flight end.
	Kept     []string `json:"kept"`
	Started  []string `json:"started"`
	Stopping []string `json:"stopping"`
	TookMs   float64  `json:"took_ms"`
}

// Description is the serving pipelines as GET /admin/pipeline shows them: every scheduling
// profile's slots (a config with pipeline: alone has the one profile "default"), Slots repeating
// the default profile's, and the plugins of all, each once.
type Description struct {
	Generation     int             `json:"generation"`
	Config         string          `json:"config"`
	LoadedAt       time.Time       `json:"loaded_at"`
	DefaultProfile string          `json:"default_profile"`
	Handler        *ProfileHandler `json:"profile_handler,omitempty"` // nil without profiles:
	Profiles       []Profile       `json:"profiles"`
	Slots          []Slot          `json:"slots"`
	Plugins        []Plugin        `json:"plugins"`
}

// Profile is one scheduling profile and its pipeline's slots.
type Profile struct {
	Name  string `json:"name"`
	Slots []Slot `json:"slots"`
}

// ProfileHandler is how the router chooses a request's profile (config.ProfileHandler).
type ProfileHandler struct {
	Header           string            `json:"header"`
	PredictionHeader string            `json:"prediction_header"`
	SLOProfile       string            `json:"slo_profile,omitempty"`
	Objectives       map[string]string `json:"objectives,omitempty"`
	// Experiment is the A/B of whole profiles, split by session: each arm's name, its profile
	// (in Plugin) and its share of the requests; absent without one.
	Experiment []Arm `json:"experiment,omitempty"`
}

// Slot is one place in the pipeline and the plugin serving it, or its experiment's arms.
type Slot struct {
	Slot   string   `json:"slot"` // the name PUT /admin/stages/{slot} takes
	Stage  string   `json:"stage"`
	Plugin string   `json:"plugin,omitempty"`
	Weight *float64 `json:"weight,omitempty"` // scorers
	Arms   []Arm    `json:"arms,omitempty"`
	Shadow *Arm     `json:"shadow,omitempty"`
}

// Arm is one plugin of a slot's experiment; Share is its fraction of the slot's requests.
type Arm struct {
	Name   string  `json:"name"`
	Plugin string  `json:"plugin"`
	Share  float64 `json:"share"`
}

// Plugin is one running plugin: its declaration and its process's state.
type Plugin struct {
	pluginhost.Status
	Type string `json:"type"`
	Path string `json:"path,omitempty"` // resolved; empty for a built-in
}
