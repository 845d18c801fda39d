// Package sdk is what a Foresight stage plugin is written against: the stage interfaces (Producer,
// Filter, Scorer, Admitter, Picker, and Reader for a stage that reads only part of the cycle) over
// plain Go types (Cycle, Endpoint, Request, Prediction, Sample), parameter handling (Params,
// DecodeParams, CheckRange), seeded randomness (Rand), logging (Log), a stage's own errors
// (StatusError, InvalidArgument), path parameters (ResolvePath), and the Serve helpers, which run
// the plugin's side of the protocol: the go-plugin handshake and the gRPC shims that translate
// between these types and the wire contracts in proto/foresight/v1.
//
// A plugin's main is one call:
//
//	func main() { sdk.ServeScorer(myscorer.New(), version) }
//
// Its logic lives in an internal package written against this package only: no gRPC, no go-plugin.
//
// Beside this package:
//   - plugins/sdk/heuristics holds the scheduling heuristics that several stages and the host's
//     built-in stages share: load scores, headroom inside the SLOs, ranking by score.
//   - plugins/sdk/sdktest helps test a stage: random cycles, and a check of its Reads declaration.
//   - plugins/sdk/transport is the host's side of the protocol: the stage clients, batching,
//     streams, and the encoding and projection of cycles. Plugins do not import it.
package sdk
