// Package heuristics holds the scheduling heuristics that several stages share with each other
// and with the host's built-in stages: the load scores of llm-d's baseline scorers (queue depth,
// KV-cache headroom, prefix match and their weighted composite), an endpoint's headroom inside a
// request's SLOs, and the seeded ranking of endpoints by score.
//
// A plugin imports it next to package sdk; every function here is a pure function of the cycle
// (and, for RankByScore, of a random source drawn from it with sdk.Rand), so stages that use it
// stay reproducible.
package heuristics
