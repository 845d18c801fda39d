// Package heuristics holds the scheduling heuristics that several stages share with each other
// and with the host's built-in stages: the load scores of llm-d's baseline scorers (queue depth,
// KV-cache headroom, prefix match and their weighted composite), an endpoint's headroom inside a
// request's SLOs, the seeded ranking of endpoints by score, and a prior TTFT from an endpoint's
// queue and first-token rate, which the host falls back on when its producer fails.
//
// The load scores must not herd. The engine gauges in an EndpointState stand still between two
// scrapes, so every request arriving in between sees the same ones; ranking by them alone would
// send a whole burst to one endpoint. The queues the load scores read therefore move with every
// dispatch: FreshWaiting, the waiting gauge plus the requests the router dispatched there since
// that scrape (EndpointState.DispatchedSinceScrape), or Inflight, the router's own count. The KV term stays the
// scraped usage: what a dispatched request takes of the cache depends on the engine's cache size
// and on whether it runs or waits, which the state does not carry. Equal scores are ranked at
// random from the cycle's seed (RankByScore), never by index.
//
// A plugin imports it next to package sdk; every function here is a pure function of the cycle
// (and, for RankByScore, of a random source drawn from it with sdk.Rand), so stages that use it
// stay reproducible.
package heuristics
