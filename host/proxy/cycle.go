package proxy

// A request's cycle: the candidates it is decided among, and why there are none.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// noEndpoint explains why a request has no candidate; full endpoints serving the model were left
// out at server.maxInflightPerEndpoint. With a gateway's subset (states holds the endpoints it
// offered), every case but full endpoints is a 503, as the endpoint picker protocol requires.
func (s *Server) noEndpoint(model string, states []endpoints.State, full int, subset bool) *openai.Error {
	routable, ejected := 0, 0
	for _, st := range states {
		if st.Routable() {
			routable++
		}
		if st.Ejected {
			ejected++
		}
	}
	switch {
	case subset && len(states) == 0:
		return &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServer,
			Message: "none of the endpoints the gateway offered (its subset hint) is one the router knows"}
	case routable == 0 && subset:
		return &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServer,
			Message: fmt.Sprintf("none of the %d endpoints the gateway offered (its subset hint) is in the rotation (%d ejected for failing requests, the others unhealthy)", len(states), ejected)}
	case routable == 0:
		return &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServer,
			Message: fmt.Sprintf("no endpoint is in the rotation (%d configured, %d ejected for failing requests, the others unhealthy)", len(states), ejected)}
	case full > 0:
		return &openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: "endpoints_full",
			Message: fmt.Sprintf("every endpoint that serves the model has %d of the router's requests in flight (server.maxInflightPerEndpoint); retry later", s.o.MaxInflightPerEndpoint)}
	case subset:
		return &openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServer, Code: "model_not_found",
			Message: "none of the endpoints the gateway offered (its subset hint) serves the model " + strconv.Quote(openai.Clip(model))}
	}
	return &openai.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: "no healthy endpoint serves the model " + strconv.Quote(openai.Clip(model))}
}

// scope is where a request may go.
type scope struct {
	// only, when non-nil, accepts the endpoints the request may go to (a gateway's subset hint).
	only func(endpoints.Endpoint) bool
	// anyModel sends a request for a model that no endpoint in the rotation lists to all of them
	// (server.unknownModels: route).
	anyModel bool
}

// anyModel is the scope's anyModel for a front: server.unknownModels when set, else the front's
// default (route for a gateway's requests, refuse for the OpenAI API's).
func (s *Server) anyModel(gateway bool) bool {
	if s.o.UnknownModels == "" {
		return gateway
	}
	return s.o.UnknownModels == config.UnknownModelsRoute
}

// cycle builds the scheduling cycle: every healthy endpoint that serves the model (or has not
// said yet what it serves) and is not full (server.maxInflightPerEndpoint), with its scraped
// gauges, the router's in-flight accounting (with what it dispatched there since that scrape) and
// its prefix match; with sc.only, among the endpoints it accepts. When none in the rotation lists
// the model and sc.anyModel, every one in the rotation serves it, and unknown says so. The fleet's
// endpoints out of the rotation go in the cycle's Excluded (see excluded). It also returns the
// endpoints it saw and how many it left out as full. pk is the request's prompt's, hashed once
// (a request may be decided again, or go beyond its decision); nil for a request the router does
// not read; the endpoints whose KV-cache events gave their match are left in pk.fromEvents.
func (s *Server) cycle(req *openai.Request, pk *promptKeys, m meta, now time.Time, sc scope) (c *sdk.Cycle, states []endpoints.State, full int, unknown bool) {
	c = &sdk.Cycle{Request: requestOf(req, m), Now: now, Seed: rand.Uint64()}
	if pk != nil {
		c.Request.PrefixBlockHashes = pk.text.Hashes
		pk.fromEvents = pk.fromEvents[:0]
		if pk.tokens != nil { // the engines' own count, not an estimate: the stages' uncached tokens are exact
			c.Request.InputTokens = int64(len(pk.tokens))
		}
	}
	states = s.o.Endpoints.Snapshot()
	c.Excluded = excluded(states)
	if sc.only != nil {
		states = slices.DeleteFunc(states, func(st endpoints.State) bool { return !sc.only(st.Endpoint) })
	}
	unknown = sc.anyModel && !slices.ContainsFunc(states, func(st endpoints.State) bool { return st.Routable() && st.Serves(req.Model) })
	c.Endpoints = make([]sdk.Endpoint, 0, len(states))
	for _, st := range states {
		if !st.Routable() || !(unknown || st.Serves(req.Model)) {
			continue
		}
		es := sdk.EndpointState{KVCacheUsage: st.KVCacheUsage, Waiting: st.Waiting, Running: st.Running,
			MetricsAgeMs: float64(st.MetricsAge) / float64(time.Millisecond)}
		s.inflight.Fill(st.ID, now, st.ScrapedAt, &es)
		decode := m.pd.Hop == sdk.HopPrefill && st.ID == m.pd.DecodeEndpoint // judged as if served whole, without its decode hop
		if decode {
			s.inflight.Discount(st.ID, m.id, st.ScrapedAt, &es)
		}
		if s.o.MaxInflightPerEndpoint > 0 && es.InflightRequests >= int64(s.o.MaxInflightPerEndpoint) {
			full++
			continue
		}
		if st.NumGPUBlocks > 0 { // the engine's cache bounds what the router believes it holds
			s.prefix.SetCapacity(st.ID, st.NumGPUBlocks)
		}
		var fromEvents bool
		if es.PrefixMatch, fromEvents = s.prefixMatch(st.ID, pk); fromEvents {
			pk.fromEvents = append(pk.fromEvents, st.ID)
		}
		if decode { // its decode hop's dispatch put the prompt in the index: the match it had before
			es.PrefixMatch = m.decodeMatch
		}
		c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: st.ID, Labels: st.Labels, State: es})
	}
	return c, states, full, unknown
}

// requestOf is what the stages see of a request, but for its prefix block hashes.
func requestOf(req *openai.Request, m meta) sdk.Request {
	return sdk.Request{ID: m.id, Model: req.Model, InputTokens: req.InputTokens(), MaxOutputTokens: req.MaxTokens,
		Streaming: req.Stream, SLO: m.slo, Priority: m.priority, SessionID: m.session, Disaggregation: m.pd}
}

// excluded returns the endpoints of states out of the rotation, with their labels and why, for
// the stages that judge a failure domain by its members (the failover filter). It takes them
// all, whatever model they serve and whatever subset a gateway offered: a failing machine says
// something about its zone whichever model it runs. On a healthy fleet it allocates nothing, and
// the stages that do not read "endpoints.excluded" are not sent it.
func excluded(states []endpoints.State) []sdk.ExcludedEndpoint {
	var out []sdk.ExcludedEndpoint
	for i := range states {
		if why := states[i].OutOfRotation(); why != "" {
			out = append(out, sdk.ExcludedEndpoint{ID: states[i].ID, Labels: states[i].Labels, Reason: why})
		}
	}
	return out
}
