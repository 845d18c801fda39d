package router

import (
	"github.com/foresight-router/foresight/host/admin"
	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Describe returns the serving pipeline's slots and plugins.
func (l *Pipelines) Describe() admin.Description {
	g := l.cur.Load()
	d := admin.Description{Generation: g.seq, Config: g.cfg.Origin(), LoadedAt: g.loaded, Slots: []admin.Slot{}, Plugins: []admin.Plugin{}}
	for _, name := range g.cfg.SlotNames() {
		ref, stage, err := g.cfg.SlotRef(name)
		if err != nil {
			continue // SlotNames lists only existing slots
		}
		s := admin.Slot{Slot: name, Stage: stage.String(), Plugin: ref.PluginRef, Arms: arms(ref)}
		if sh := ref.Shadow; sh != nil {
			s.Shadow = &admin.Arm{Name: sh.ArmName(), Plugin: sh.PluginRef}
		}
		if stage == sdk.StageScorer {
			w := ref.WeightOr1()
			s.Weight = &w
		}
		d.Slots = append(d.Slots, s)
	}
	for _, pl := range g.pipe.Plugins() {
		d.Plugins = append(d.Plugins, describePlugin(pl))
	}
	return d
}

// arms describes ref's arms with their shares of the requests.
func arms(ref *config.StageRef) []admin.Arm {
	if len(ref.Arms) == 0 {
		return nil
	}
	total := 0.0
	for _, a := range ref.Arms {
		total += a.ArmWeight()
	}
	out := make([]admin.Arm, 0, len(ref.Arms))
	for _, a := range ref.Arms {
		out = append(out, admin.Arm{Name: a.ArmName(), Plugin: a.PluginRef, Share: a.ArmWeight() / total})
	}
	return out
}

func describePlugin(pl *pluginhost.Plugin) admin.Plugin {
	return admin.Plugin{Status: pl.Status(), Type: pl.Spec().Type, Path: pl.Spec().Path}
}
