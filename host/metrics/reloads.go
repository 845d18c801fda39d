package metrics

import "github.com/prometheus/client_golang/prometheus"

// Reloads counts pipeline reloads (SIGHUP, a change of the config file, POST /admin/reload,
// PUT /admin/stages/{slot}):
//
//	foresight_reloads_total{result}   result is "ok" (swapped in) or "failed" (the old pipeline kept serving)
type Reloads struct{ total *prometheus.CounterVec }

// NewReloads returns the reload counter, registered with reg; both results start at zero.
func NewReloads(reg prometheus.Registerer) (*Reloads, error) {
	r := &Reloads{total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "foresight_reloads_total",
		Help: "Pipeline reloads by result: ok (swapped in) or failed (the old pipeline kept serving)."}, []string{"result"})}
	r.total.WithLabelValues("ok")
	r.total.WithLabelValues("failed")
	if err := reg.Register(r.total); err != nil {
		return nil, err
	}
	return r, nil
}

// Observe counts one reload that ended with err (nil: ok).
func (r *Reloads) Observe(err error) {
	result := "ok"
	if err != nil {
		result = "failed"
	}
	r.total.WithLabelValues(result).Inc()
}
