package router

import (
	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Describe returns the serving pipelines' slots, profile by profile, and their plugins. Slots is
// the default profile's, as it was before profiles.
func (l *Pipelines) Describe() admin.Description {
	g := l.cur.Load()
	d := admin.Description{Generation: g.seq, Config: g.cfg.Origin(), LoadedAt: g.loaded, DefaultProfile: g.cfg.DefaultProfileName(),
		Profiles: []admin.Profile{}, Plugins: []admin.Plugin{}}
	if h := g.cfg.ProfileHandler; h != nil {
		d.Handler = &admin.ProfileHandler{Header: h.Header, PredictionHeader: h.PredictionHeader, SLOProfile: h.SLOProfile, Objectives: h.Objectives}
		if x := h.Experiment; x != nil {
			d.Handler.Experiment = shares(x.Arms, func(a config.ProfileArm) string { return a.Profile })
		}
	}
	for _, profile := range g.cfg.ProfileNames() {
		slots := []admin.Slot{}
		for _, name := range g.cfg.ProfileSlotNames(profile) {
			ref, stage, err := g.cfg.ProfileSlotRef(profile, name)
			if err != nil {
				continue // ProfileSlotNames lists only existing slots
			}
			s := admin.Slot{Slot: name, Stage: stage.String(), Plugin: ref.PluginRef, Arms: arms(ref)}
			if sh := ref.Shadow; sh != nil {
				s.Shadow = &admin.Arm{Name: sh.ArmName(), Plugin: sh.PluginRef}
			}
			if stage == sdk.StageScorer {
				w := ref.WeightOr1()
				s.Weight = &w
			}
			slots = append(slots, s)
		}
		d.Profiles = append(d.Profiles, admin.Profile{Name: profile, Slots: slots})
		if profile == d.DefaultProfile {
			d.Slots = slots
		}
	}
	for _, pl := range l.Plugins() {
		d.Plugins = append(d.Plugins, describePlugin(pl))
	}
	return d
}

// arms describes ref's arms with their shares of the requests.
func arms(ref *config.StageRef) []admin.Arm {
	return shares(ref.Arms, func(a config.Arm) string { return a.PluginRef })
}

// shares describes an experiment's arms: each one's name, what serves it (a plugin, or a
// profile) and its share of the requests; nil without arms.
func shares[A interface {
	ArmName() string
	ArmWeight() float64
}](list []A, serves func(A) string) []admin.Arm {
	if len(list) == 0 {
		return nil
	}
	total := 0.0
	for _, a := range list {
		total += a.ArmWeight()
	}
	out := make([]admin.Arm, 0, len(list))
	for _, a := range list {
		out = append(out, admin.Arm{Name: a.ArmName(), Plugin: serves(a), Share: a.ArmWeight() / total})
	}
	return out
}

func describePlugin(pl *pluginhost.Plugin) admin.Plugin {
	return admin.Plugin{Status: pl.Status(), Type: pl.Spec().Type, Path: pl.Spec().Path}
}
