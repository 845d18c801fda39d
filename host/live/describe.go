package live

import (
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pluginhost"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Description is the serving pipeline as GET /admin/pipeline shows it.
type Description struct {
	Generation int       `json:"generation"`
	Config     string    `json:"config"`
	LoadedAt   time.Time `json:"loaded_at"`
	Slots      []Slot    `json:"slots"`
	Plugins    []Plugin  `json:"plugins"`
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

// Describe returns the serving pipeline's slots and plugins.
func (l *Live) Describe() Description {
	g := l.cur.Load()
	d := Description{Generation: g.seq, Config: g.cfg.Origin(), LoadedAt: g.loaded, Slots: []Slot{}, Plugins: []Plugin{}}
	for _, name := range g.cfg.SlotNames() {
		ref, stage, err := g.cfg.SlotRef(name)
		if err != nil {
			continue // SlotNames lists only existing slots
		}
		s := Slot{Slot: name, Stage: stage.String(), Plugin: ref.PluginRef, Arms: arms(ref)}
		if sh := ref.Shadow; sh != nil {
			s.Shadow = &Arm{Name: sh.ArmName(), Plugin: sh.PluginRef}
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
func arms(ref *config.StageRef) []Arm {
	if len(ref.Arms) == 0 {
		return nil
	}
	total := 0.0
	for _, a := range ref.Arms {
		total += a.ArmWeight()
	}
	out := make([]Arm, 0, len(ref.Arms))
	for _, a := range ref.Arms {
		out = append(out, Arm{Name: a.ArmName(), Plugin: a.PluginRef, Share: a.ArmWeight() / total})
	}
	return out
}

func describePlugin(pl *pluginhost.Plugin) Plugin {
	return Plugin{Status: pl.Status(), Type: pl.Spec().Type, Path: pl.Spec().Path}
}
