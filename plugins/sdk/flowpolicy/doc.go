// Package flowpolicy holds the logic of flow control's two stages, shared by the router's
// built-in fast path (host/builtin) and the plugin binaries that serve them
// (plugins/saturation-detector, plugins/predicted-saturation-detector, plugins/slo-order):
//
//   - the saturation detectors, which say for a request which endpoints have room now
//     (sdk.Detector): saturation-detector judges by the endpoints' state, the engines' gauges and
//     the router's in-flight counts; predicted-saturation-detector by the producer's predictions,
//     with the state rule for an endpoint without a usable prediction;
//   - the ordering policy slo-order, which gives a queued request its key (sdk.Orderer): first
//     come first served, earliest TTFT deadline first, or earliest deadline first among the
//     requests that can still meet theirs.
//
// Every type here is logic over the cycles it is asked about, safe for concurrent calls, and
// configured through sdk.Params, so the built-in and the binary of a type are the same code with
// the same parameters. The order is pure; the detectors also learn, from the gauges cycle after
// cycle, which engines run a fixed number of requests at once (slots.go).
package flowpolicy
