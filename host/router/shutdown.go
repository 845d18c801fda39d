package router

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/proxy"
)

// lastWords is how long the requests cut at the end of the shutdown grace get to write the
// router's error (an error event in a stream) and end, before their connections are closed.
const lastWords = 2 * time.Second

// drain stops both fronts at once: they stop accepting, and the requests in flight get
// server.shutdownGrace to finish. Past it the ones left are cancelled with proxy.ErrShuttingDown,
// which each answers with the router's 503 (router_shutting_down) — logged and counted — and
// after lastWords whatever still holds a connection is closed.
func (r *Router) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), r.grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range []*http.Server{r.api, r.admin} {
		if s != nil {
			wg.Go(func() { r.drainHTTP(ctx, s) })
		}
	}
	if r.ext != nil {
		wg.Go(func() { r.stopExtProc(ctx) })
	}
	wg.Wait()
}

// drainHTTP shuts s down within ctx; past it, the requests left are cut and get lastWords.
func (r *Router) drainHTTP(ctx context.Context, s *http.Server) {
	if s.Shutdown(ctx) == nil {
		return
	}
	r.cut()
	last, cancel := context.WithTimeout(context.Background(), lastWords)
	defer cancel()
	if s.Shutdown(last) != nil { // a handler that does not watch its request's context
		_ = s.Close()
	}
}

// cut cancels every request of the HTTP listeners with proxy.ErrShuttingDown, once.
func (r *Router) cut() {
	r.cutOnce.Do(func() {
		r.log.Warn().Dur("grace", r.grace).Msg("shutdown grace (server.shutdownGrace) ended: the requests still in flight end with 503 router_shutting_down")
		r.stopRequests(proxy.ErrShuttingDown)
	})
}
