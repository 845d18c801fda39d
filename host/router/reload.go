package router

import (
	"context"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/internal/filewatch"
)

// Reload rebuilds the pipeline from the config file and swaps it in (Pipelines.Reload); source
// says who asked (SIGHUP, POST /admin/reload, the file changed) for the log. Only plugins,
// pipeline, profiles and profileHandler take effect, and with the pipeline flow control's stages
// (its detector and order slots, or the built-ins flowControl.policy and flowControl.detector
// configure): the server, endpoints, scrape, objectives sections and the rest of flowControl
// need a restart (the endpoints file is watched on its own; a change of the queue's settings is
// logged as not applied). Every reload is logged and counted in foresight_reloads_total{result};
// a failed one leaves the old pipeline serving.
func (r *Router) Reload(ctx context.Context, source string) (admin.Result, error) {
	data, err := os.ReadFile(r.file)
	if err != nil {
		return r.reloaded(source, admin.Result{}, err)
	}
	return r.reloadData(ctx, source, data)
}

func (r *Router) reloadData(ctx context.Context, source string, data []byte) (admin.Result, error) {
	cfg, err := config.Parse(r.file, data)
	if err != nil {
		return r.reloaded(source, admin.Result{}, err)
	}
	r.state.pluginEnv(cfg)
	res, err := r.pipes.Reload(ctx, cfg)
	if err == nil {
		r.srv.SetDisaggregation(cfg.Disaggregation) // it names the profiles just swapped in
	}
	if err == nil && !reflect.DeepEqual(queueSettings(cfg.FlowControl), queueSettings(r.flow)) {
		// The queue holds waiting requests and their handlers: swapping it under them would
		// lose or reorder them, so its settings are read at start only.
		r.log.Warn().Str("source", source).Msg("flowControl's queue settings changed (enabled, flowKey, flowHeader, default, bands, noEndpointsTTL, candidates); they are read at start only: restart the router to apply them (the running queue keeps its settings; policy and detector, the pipeline's, were applied)")
	}
	if err == nil && !r.state.same(cfg.State) {
		r.log.Warn().Str("source", source).Msg("the state section changed; it is read at start only: restart the router to apply it")
	}
	if err == nil && !reflect.DeepEqual(cfg.KVEvents, r.kv.section) {
		r.log.Warn().Str("source", source).Msg("the kvEvents section changed; it is read at start only: restart the router to apply it")
	}
	return r.reloaded(source, res, err)
}

// SwapStage serves one slot of a profile's serving pipeline ("": the default profile's) with
// spec, leaving the file alone (Pipelines.SwapProfileStage); the next reload from the file undoes it.
func (r *Router) SwapStage(ctx context.Context, profile, slot string, spec config.PluginSpec, weight *float64) (admin.Result, error) {
	source := "PUT /admin/stages/" + slot
	if profile != "" {
		source += "?profile=" + profile
	}
	r.state.specEnv(&spec)
	res, err := r.pipes.SwapProfileStage(ctx, profile, slot, spec, weight, source)
	return r.reloaded(source, res, err)
}

// Describe returns the serving pipelines (GET /admin/pipeline).
func (r *Router) Describe() admin.Description { return r.pipes.Describe() }

// Experiments returns the experiment report (GET /admin/experiments); ok is false without one.
func (r *Router) Experiments() (any, bool) { return r.pipes.ExperimentReport() }

// reloaded logs and counts a reload's outcome and passes it on.
func (r *Router) reloaded(source string, res admin.Result, err error) (admin.Result, error) {
	r.reloads.Observe(err)
	ev := admin.Event{At: time.Now().UTC(), Kind: admin.EventReload, OK: err == nil, Source: source, Generation: res.Generation}
	if strings.HasPrefix(source, "PUT /admin/stages/") {
		ev.Kind = admin.EventSwap
	}
	if err != nil {
		ev.Detail = err.Error()
	}
	r.events.Add(ev)
	if err != nil {
		r.log.Error().Err(err).Str("source", source).Msg("reload failed; the previous pipeline keeps serving")
		return res, err
	}
	r.log.Info().Str("source", source).Int("generation", res.Generation).Strs("kept", res.Kept).
		Strs("started", res.Started).Strs("stopping", res.Stopping).Float64("took_ms", res.TookMs).Msg("pipeline reloaded")
	return res, nil
}

// watchConfig reloads the pipeline whenever the config file's content changes.
func (r *Router) watchConfig(ctx context.Context, file string) {
	err := filewatch.Watch(ctx, file, func(data []byte) {
		_, _ = r.reloadData(ctx, "the config file changed", data)
	}, func(err error) {
		r.reloads.Observe(err)
		r.log.Error().Err(err).Msg("config file unreadable; the previous pipeline keeps serving")
	})
	if err != nil {
		r.log.Warn().Err(err).Msg("the config file is not watched: reload with SIGHUP or POST /admin/reload")
	}
}

// restartPoll is how often the router looks for restarted plugins for the dashboard's timeline:
// the process supervisor counts restarts without telling anyone, and a second is the page's own
// refresh period.
const restartPoll = time.Second

// watchRestarts records a restart event whenever a plugin's restart count grows, until ctx ends.
func (r *Router) watchRestarts(ctx context.Context) {
	t := time.NewTicker(restartPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			counts := map[string]int64{}
			for _, p := range r.pipes.Plugins() {
				st := p.Status()
				counts[st.Name] = st.Restarts
			}
			r.events.Restarts(counts, now.UTC())
		}
	}
}

// queueSettings is the part of a flowControl section the queue holds, read at start only: all but
// policy and detector, which configure the pipeline's built-in stages and change with it.
func queueSettings(f config.FlowControl) config.FlowControl {
	f.Policy, f.Detector = "", config.Detector{}
	return f
}
