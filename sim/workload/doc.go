// Package workload generates the request streams the simulator and the routing bench replay:
// the llm-d blog's shared-prefix scenarios A–D (built the way inference-perf's shared_prefix
// generator builds them), a ShareGPT-like chat mix, the production load ladder, and replays of the
// Azure 2023 and Mooncake traces.
//
// Prompts are never materialised as text. A request carries the chained hashes of its prompt's
// full 16-token KV blocks (Blocks) and of the full blocks its answer completes (OutputBlocks), the
// way vLLM's prefix cache identifies blocks: block i's hash mixes block i−1's hash with the exact
// token content of block i, so two requests share a block if and only if they share every token
// up to and including it. Everything is a pure function of the scenario parameters and the seed.
//
// See README.md for each workload's parameters, defaults and sources.
package workload
