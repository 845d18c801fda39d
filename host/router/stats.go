package router

import "github.com/foresight-router/foresight/host/pipeline"

// Stats returns every serving pipeline's slot stats (pipeline.Pipeline.Stats), profile by
// profile in the config's order.
func (l *Pipelines) Stats() []pipeline.Stats {
	var out []pipeline.Stats
	l.cur.Load().each(func(p *pipeline.Pipeline) { out = append(out, p.Stats()...) })
	return out
}
