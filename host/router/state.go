package router

import (
	"maps"
	"reflect"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/stateplane"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// The variables every plugin process gets while the router has a state plane: where its NATS is,
// the subjects' prefix and this replica's ID. The producer shares its samples and models there
// (its shareNATS parameter, "host" by default).
const (
	EnvNATSURL    = "FORESIGHT_NATS_URL"
	EnvNATSPrefix = "FORESIGHT_NATS_PREFIX"
	EnvReplica    = "FORESIGHT_REPLICA_ID"
)

// state is the router's state plane: the embedded NATS server when it runs one, the plane once
// connected, and what plugin processes are told of it. The section is read at start only.
type state struct {
	section  config.State
	embedded *stateplane.Embedded // nil with an external NATS
	url      string
	plane    *stateplane.Plane
	env      map[string]string
}

// startState starts the embedded NATS server when the section asks for one, and returns the
// state plane to connect once the metrics exist; nil without a state section.
func startState(cfg *config.Config) (*state, error) {
	if cfg.State == nil {
		return nil, nil
	}
	s := &state{section: *cfg.State, url: cfg.State.NATS.URL}
	if e := cfg.State.NATS.Embedded; e != nil {
		var err error
		if s.embedded, err = stateplane.Embed(stateplane.EmbedConfig{Listen: e.Listen, StoreDir: e.StoreDir}); err != nil {
			return nil, err
		}
		s.url = s.embedded.URL()
	}
	s.env = map[string]string{EnvNATSURL: s.url, EnvNATSPrefix: s.section.Prefix, EnvReplica: s.section.Replica}
	return s, nil
}

// pluginEnv adds the state plane's variables to every plugin of cfg that does not set them.
func (s *state) pluginEnv(cfg *config.Config) {
	if s == nil {
		return
	}
	for i := range cfg.Plugins {
		s.specEnv(&cfg.Plugins[i])
	}
}

func (s *state) specEnv(spec *config.PluginSpec) {
	if s == nil {
		return
	}
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	for k, v := range s.env {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	spec.Env = env
}

// connect creates the plane and connects it: in process to the embedded server, else to the
// section's URL (retried in the background when it cannot be reached yet).
func (s *state) connect(now func() time.Time, propagation func(time.Duration), log zerolog.Logger) error {
	pc := s.section.PlaneConfig()
	pc.Now, pc.Propagation, pc.Log = now, propagation, log
	plane, err := stateplane.New(pc)
	if err != nil {
		return err
	}
	var opts []nats.Option
	if s.embedded != nil {
		opts = append(opts, nats.InProcessServer(s.embedded.Server()))
	}
	if err := plane.Start(s.url, opts...); err != nil {
		return err
	}
	s.plane = plane
	log.Info().Str("replica", pc.Replica).Str("nats", s.url).Bool("embedded", s.embedded != nil).Msg("state plane started")
	return nil
}

// same reports whether section is the one the plane started with.
func (s *state) same(section *config.State) bool {
	if s == nil || section == nil {
		return s == nil && section == nil
	}
	return reflect.DeepEqual(s.section, *section)
}

// StateURL is the address of the router's state plane's NATS (its embedded server's, or the
// section's URL); "" without a state section.
func (r *Router) StateURL() string {
	if r.state == nil {
		return ""
	}
	return r.state.url
}

// stats is the plane's counters (zero before it connects).
func (s *state) stats() stateplane.Stats {
	if s.plane == nil {
		return stateplane.Stats{}
	}
	return s.plane.Stats()
}

// closePlane stops the plane; closeServer then the embedded server, after the plugins, which may
// share their samples through it.
func (s *state) closePlane() {
	if s != nil && s.plane != nil {
		s.plane.Close()
	}
}

func (s *state) closeServer() {
	if s != nil && s.embedded != nil {
		s.embedded.Shutdown()
	}
}
