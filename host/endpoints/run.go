package endpoints

import (
	"context"
	"time"
)

// Run keeps the set's state fresh until ctx ends, with one goroutine per endpoint: an endpoint
// in the rotation is scraped every Interval; one out of it is probed every ProbeInterval (GET
// /health, then a scrape, whose success brings it back); each healthy endpoint's /v1/models is
// read at once and then every ModelsInterval. Endpoints added by Update while Run runs start at
// once. Run returns after all its goroutines stopped. A second call while one runs returns at
// once.
func (s *Set) Run(ctx context.Context) {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running, s.runCtx = true, ctx
	for _, m := range s.members {
		s.start(m)
	}
	s.mu.Unlock()

	<-ctx.Done()
	s.mu.Lock()
	s.runCtx = nil // Update starts no more loops
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
}

// start launches m's loop if Run runs; Set.mu must be held.
func (s *Set) start(m *member) {
	if s.runCtx == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.runCtx)
	m.cancel = cancel
	sc := newScraper(s.cfg, m.st.Endpoint)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer sc.close()
		s.loop(ctx, m, sc)
	}()
}

// loop scrapes or probes m until ctx ends.
func (s *Set) loop(ctx context.Context, m *member, sc *scraper) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var modelsDue time.Time // zero: read the models at once
	wasHealthy := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		healthy := s.healthy(m)
		if healthy {
			s.scrape(ctx, m, sc)
		} else {
			s.probe(ctx, m, sc)
		}
		if ctx.Err() != nil {
			return
		}
		s.noteReturn(m)
		healthy = s.healthy(m)
		if healthy && !wasHealthy {
			modelsDue = time.Time{} // back in the rotation: perhaps restarted with other models
		}
		wasHealthy = healthy
		if healthy && !start.Before(modelsDue) {
			modelsDue = start.Add(s.cfg.ModelsInterval)
			if !s.refreshModels(ctx, m, sc) {
				modelsDue = start.Add(min(s.cfg.ProbeInterval, s.cfg.ModelsInterval))
			}
		}
		period := s.cfg.Interval
		if !healthy {
			period = s.cfg.ProbeInterval
		}
		timer.Reset(untilTick(time.Now(), period))
	}
}

// untilTick returns how long from now until the next multiple of period on the wall clock. Every
// loop waits for those ticks, so the endpoints' scrapes of one period start together and the
// process wakes once per period, not once per endpoint; a scrape that overran its period skips
// the tick it missed rather than starting late.
func untilTick(now time.Time, period time.Duration) time.Duration {
	return now.Truncate(period).Add(period).Sub(now)
}

func (s *Set) healthy(m *member) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return m.st.Healthy
}

// scrape reads m's metrics and records the outcome (a failure caused by ctx ending is not one).
func (s *Set) scrape(ctx context.Context, m *member, sc *scraper) {
	g, err := sc.scrape(ctx)
	if ctx.Err() != nil {
		return
	}
	s.record(m, g, err)
}

// record applies one scrape's outcome to m: its gauges, or a failure.
func (s *Set) record(m *member, g gauges, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.fail(m, err.Error())
		return
	}
	st := &m.st
	st.Waiting, st.Running, st.KVCacheUsage = g.waiting, g.running, g.kvCacheUsage
	if g.cacheKnown {
		st.BlockSize, st.NumGPUBlocks = g.blockSize, g.numGPUBlocks
	}
	st.ScrapedAt = s.cfg.Now()
	st.Failures, st.LastError, st.Healthy = 0, "", true
}

// probe asks an endpoint out of the rotation whether it is up and, if so, scrapes it.
func (s *Set) probe(ctx context.Context, m *member, sc *scraper) {
	err := sc.health(ctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.mu.Lock()
		s.fail(m, "probing: "+err.Error())
		s.mu.Unlock()
		return
	}
	s.scrape(ctx, m, sc)
}

// refreshModels reads m's models and reports whether it could. A failure does not count toward
// FailAfter (the scrapes judge health) and keeps the models last read.
func (s *Set) refreshModels(ctx context.Context, m *member, sc *scraper) bool {
	models, err := sc.models(ctx)
	if err != nil {
		return false
	}
	s.mu.Lock()
	m.st.Models = models
	s.mu.Unlock()
	return true
}
