package endpoints

import (
	"cmp"
	"fmt"
	"time"
)

// Outlier configures outlier ejection: an endpoint whose requests keep failing while its metrics
// still answer (a broken engine behind a healthy exporter) leaves the rotation for a while, as
// Envoy's outlier detection ejects a host. Zero fields take the defaults, which are Envoy's.
type Outlier struct {
	// ConsecutiveFailures is how many requests in a row must fail to eject the endpoint
	// (default 5, Envoy's consecutive_5xx).
	ConsecutiveFailures int
	// BaseEjectionTime is the first ejection's length; an endpoint ejected again soon after
	// stays out n times as long at its n-th ejection, up to MaxEjectionTime (defaults 30s and
	// 300s). Each BaseEjectionTime spent back in the rotation takes one off n.
	BaseEjectionTime, MaxEjectionTime time.Duration
	// MaxEjectionPercent caps the share of the endpoints ejected at once (default 10). One may
	// always be, but never the last endpoint in the rotation: ejecting it would leave nothing
	// to fail over to.
	MaxEjectionPercent int
	// Disabled turns ejection off.
	Disabled bool
}

// Outlier defaults (Envoy's outlier detection).
const (
	DefaultConsecutiveFailures = 5
	DefaultBaseEjectionTime    = 30 * time.Second
	DefaultMaxEjectionTime     = 300 * time.Second
	DefaultMaxEjectionPercent  = 10
)

// WithDefaults returns o with its zero fields set, or an error naming a bad one.
func (o Outlier) WithDefaults() (Outlier, error) {
	if o.ConsecutiveFailures < 0 || o.BaseEjectionTime < 0 || o.MaxEjectionTime < 0 {
		return o, fmt.Errorf("consecutive failures and ejection times must not be negative")
	}
	if o.MaxEjectionPercent < 0 || o.MaxEjectionPercent > 100 {
		return o, fmt.Errorf("max ejection percent must be in [0, 100], got %d", o.MaxEjectionPercent)
	}
	o.ConsecutiveFailures = cmp.Or(o.ConsecutiveFailures, DefaultConsecutiveFailures)
	o.BaseEjectionTime = cmp.Or(o.BaseEjectionTime, DefaultBaseEjectionTime)
	o.MaxEjectionTime = cmp.Or(o.MaxEjectionTime, DefaultMaxEjectionTime)
	o.MaxEjectionPercent = cmp.Or(o.MaxEjectionPercent, DefaultMaxEjectionPercent)
	if o.MaxEjectionTime < o.BaseEjectionTime {
		return o, fmt.Errorf("max ejection time %v is below the base ejection time %v", o.MaxEjectionTime, o.BaseEjectionTime)
	}
	return o, nil
}

// ReportRequest records how a request the proxy sent to the endpoint called id ended: err nil
// when the engine answered it (an error of its own about the request included), else why it
// failed (no connection, a 5xx, no first byte, a broken stream, …). ConsecutiveFailures failed
// requests in a row eject the endpoint (see Outlier); reports about an ejected endpoint (its
// requests still in flight) and unknown ids are ignored.
//
// An endpoint that reached ConsecutiveFailures but may not be ejected (it is the last one in the
// rotation, the ejected share is at MaxEjectionPercent, or ejection is Disabled) is Failing until
// one of its requests succeeds: it stays in the rotation, so that traffic finds it once it
// recovers, but it is not serving.
func (s *Set) ReportRequest(id string, err error) {
	o := s.cfg.Outlier
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.byID[id]
	if m == nil || now.Before(m.st.EjectedUntil) {
		return
	}
	if err == nil {
		m.st.RequestFailures, m.st.Failing = 0, false
		return
	}
	m.st.RequestFailures++
	if m.st.RequestFailures < o.ConsecutiveFailures {
		return
	}
	if o.Disabled || !s.mayEject(m, now) {
		// It stays, and is ejected at its next failure if another endpoint can then take its share.
		if !m.st.Failing {
			m.st.Failing = true
			s.cfg.Log.Warn().Str("endpoint", id).Int("failed_requests", m.st.RequestFailures).Str("last_error", err.Error()).
				Str("kept_because", s.keptBecause(m, now)).Msg("endpoint failing every request, kept in the rotation")
		}
		return
	}
	back := int(now.Sub(m.st.EjectedUntil) / o.BaseEjectionTime) // base periods in the rotation since the last ejection
	m.streak = max(m.streak-back, 0) + 1
	d := min(o.BaseEjectionTime*time.Duration(m.streak), o.MaxEjectionTime)
	m.st.EjectedUntil, m.st.RequestFailures, m.st.Failing, m.returned = now.Add(d), 0, false, false
	m.st.Ejections++
	s.cfg.Log.Warn().Str("endpoint", id).Int("failed_requests", o.ConsecutiveFailures).Dur("for", d).
		Int("ejection", m.streak).Str("last_error", err.Error()).
		Msg("endpoint ejected: its requests keep failing")
}

// keptBecause says why m, failing, was not ejected at now; Set.mu must be held.
func (s *Set) keptBecause(m *member, now time.Time) string {
	if s.cfg.Outlier.Disabled {
		return "outlier ejection is disabled"
	}
	for _, o := range s.members {
		if o != m && o.st.Healthy && !now.Before(o.st.EjectedUntil) {
			return fmt.Sprintf("the ejected share is at its most (%d%%)", s.cfg.Outlier.MaxEjectionPercent)
		}
	}
	return "it is the last endpoint in the rotation"
}

// mayEject reports whether m may be ejected at now: another endpoint stays in the rotation, and
// the ejected share stays within MaxEjectionPercent (one may always be). Set.mu must be held.
func (s *Set) mayEject(m *member, now time.Time) bool {
	ejected, others := 0, 0
	for _, o := range s.members {
		switch {
		case now.Before(o.st.EjectedUntil):
			ejected++
		case o != m && o.st.Healthy:
			others++
		}
	}
	return others > 0 && (ejected == 0 || (ejected+1)*100 <= s.cfg.Outlier.MaxEjectionPercent*len(s.members))
}

// noteReturn logs, once, that m's ejection ended and it is back in the rotation.
func (s *Set) noteReturn(m *member) {
	now := s.cfg.Now()
	s.mu.RLock()
	due := !m.returned && !m.st.EjectedUntil.IsZero() && !now.Before(m.st.EjectedUntil)
	s.mu.RUnlock()
	if !due {
		return
	}
	s.mu.Lock()
	m.returned = true
	id := m.st.ID
	s.mu.Unlock()
	s.cfg.Log.Info().Str("endpoint", id).Msg("endpoint back in the rotation after its ejection")
}
