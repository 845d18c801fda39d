package router

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// profilesYAML has two profiles of built-in stages sharing a picker: load scores by queue, slo by
// KV-cache headroom; requests with an SLO go to slo.
const profilesYAML = `
plugins:
  - {name: queue, type: queue-scorer}
  - {name: kv, type: kv-cache-utilization-scorer}
  - {name: pick, type: max-score-picker}
profiles:
  - name: load
    pipeline:
      scorers: [{pluginRef: queue}]
      picker: {pluginRef: pick}
  - name: slo
    pipeline:
      scorers: [{pluginRef: kv}]
      picker: {pluginRef: pick}
profileHandler: {sloProfile: slo}
`

// splitCycle has endpoint a with a queue and a nearly empty KV cache, b idle with a nearly full
// one: the queue scorer picks b (0 waiting against 5), the KV-cache scorer a (1 − 0.1 against
// 1 − 0.9).
func splitCycle(id string) *sdk.Cycle {
	return &sdk.Cycle{
		Request: sdk.Request{ID: id},
		Now:     time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC),
		Endpoints: []sdk.Endpoint{
			{ID: "a", State: sdk.EndpointState{Waiting: 5, KVCacheUsage: 0.1}},
			{ID: "b", State: sdk.EndpointState{Waiting: 0, KVCacheUsage: 0.9}},
		},
	}
}

// decide chooses the request's profile as the proxy does and runs its cycle there.
func decide(t *testing.T, l *Pipelines, h http.Header, hasSLO bool) *pipeline.Trace {
	t.Helper()
	profile, _, err := l.Choose(h, "", hasSLO)
	if err != nil {
		t.Fatal(err)
	}
	return l.RunProfile(context.Background(), profile, splitCycle("r"))
}

func TestProfilesDecideDifferently(t *testing.T) {
	l := start(t, profilesYAML)
	if tr := decide(t, l, http.Header{}, false); tr.Profile != "load" || picked(tr) != "b" {
		t.Errorf("without an SLO: profile %q picked %q, want load picking b", tr.Profile, picked(tr))
	}
	if tr := decide(t, l, http.Header{}, true); tr.Profile != "slo" || picked(tr) != "a" {
		t.Errorf("with an SLO: profile %q picked %q, want slo picking a", tr.Profile, picked(tr))
	}
	h := http.Header{}
	h.Set(config.DefaultProfileHeader, "load")
	if tr := decide(t, l, h, true); tr.Profile != "load" || picked(tr) != "b" {
		t.Errorf("naming load over an SLO: profile %q picked %q", tr.Profile, picked(tr))
	}
	h.Set(config.DefaultProfileHeader, "fast")
	var pe *config.ProfileError
	if _, _, err := l.Choose(h, "", false); !errors.As(err, &pe) || pe.Header != config.DefaultProfileHeader {
		t.Errorf("an unknown profile: %v, want a ProfileError naming the header", err)
	}
	// Run is the default profile's.
	if tr := l.Run(context.Background(), splitCycle("r")); tr.Profile != "load" {
		t.Errorf("Run decided in %q, want the default profile", tr.Profile)
	}
	// The picker both profiles use is one plugin, listed once.
	var names []string
	for _, p := range l.Plugins() {
		names = append(names, p.Name())
	}
	if !slices.Equal(names, []string{"queue", "pick", "kv"}) {
		t.Errorf("plugins %v, want queue, pick, kv", names)
	}
	d := l.Describe()
	if d.DefaultProfile != "load" || len(d.Profiles) != 2 || d.Profiles[1].Name != "slo" || d.Profiles[1].Slots[0].Plugin != "kv" ||
		d.Slots[0].Plugin != "queue" || d.Handler == nil || d.Handler.SLOProfile != "slo" || len(d.Plugins) != 3 {
		t.Errorf("description %+v", d)
	}
	if _, err := l.Observe(context.Background(), nil); !errors.Is(err, pipeline.ErrNoProducer) {
		t.Errorf("observe without producers: %v", err)
	}
}

func TestReloadChangesOneProfileKeepsTheOther(t *testing.T) {
	l := start(t, profilesYAML)
	before := l.Plugins()
	// slo now scores by queue as well, through a plugin of its own.
	changed := strings.Replace(profilesYAML, "scorers: [{pluginRef: kv}]", "scorers: [{pluginRef: queue2}]", 1)
	changed = strings.Replace(changed, "{name: kv, type: kv-cache-utilization-scorer}", "{name: queue2, type: queue-scorer}", 1)
	res, err := l.Reload(context.Background(), parse(t, changed))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Kept, []string{"queue", "pick"}) || !slices.Equal(res.Started, []string{"queue2"}) || !slices.Equal(res.Stopping, []string{"kv"}) {
		t.Errorf("result %+v, want queue and pick kept, queue2 started, kv stopping", res)
	}
	if after := l.Plugins(); after[0] != before[0] || after[1] != before[1] {
		t.Error("the load profile's plugins were replaced, not kept")
	}
	if tr := decide(t, l, http.Header{}, true); tr.Profile != "slo" || picked(tr) != "b" {
		t.Errorf("the changed slo profile: %q picked %q, want slo picking b", tr.Profile, picked(tr))
	}
	// A reload that fails in one profile leaves both serving as they were.
	bad := strings.Replace(changed, "{name: queue2, type: queue-scorer}", "{name: queue2, type: no-such-scorer}", 1)
	if _, err := l.Reload(context.Background(), parse(t, bad)); err == nil || !strings.HasPrefix(err.Error(), `profile "slo": `) {
		t.Errorf("bad reload: %v, want an error naming the profile", err)
	}
	if g, _ := l.Generation(); g != 2 {
		t.Errorf("generation %d after the failed reload, want 2", g)
	}
}

func TestSwapStageInANamedProfile(t *testing.T) {
	l := start(t, profilesYAML)
	res, err := l.SwapProfileStage(context.Background(), "slo", "scorers.0", config.PluginSpec{Name: "queue2", Type: "queue-scorer"}, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Started, []string{"queue2"}) || !slices.Equal(res.Stopping, []string{"kv"}) {
		t.Errorf("result %+v", res)
	}
	if tr := decide(t, l, http.Header{}, true); picked(tr) != "b" {
		t.Errorf("slo after the swap picked %q, want b (queue)", picked(tr))
	}
	if ref, _, _ := l.Config().ProfileSlotRef("load", "scorers.0"); ref.PluginRef != "queue" {
		t.Errorf("the load profile's scorer became %q", ref.PluginRef)
	}
	if _, err := l.SwapProfileStage(context.Background(), "fast", "picker", config.PluginSpec{Type: "round-robin-picker"}, nil, "test"); !errors.Is(err, config.ErrNoProfile) {
		t.Errorf("a missing profile: %v", err)
	}
}
