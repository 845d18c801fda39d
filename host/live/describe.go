package live

import (
	"time"

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

// Slot is one place in the pipeline and the plugin serving it.
type Slot struct {
	Slot   string   `json:"slot"` // the name PUT /admin/stages/{slot} takes
	Stage  string   `json:"stage"`
	Plugin string   `json:"plugin"`
	Weight *float64 `json:"weight,omitempty"` // scorers
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
		s := Slot{Slot: name, Stage: stage.String(), Plugin: ref.PluginRef}
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

func describePlugin(pl *pluginhost.Plugin) Plugin {
	return Plugin{Status: pl.Status(), Type: pl.Spec().Type, Path: pl.Spec().Path}
}
