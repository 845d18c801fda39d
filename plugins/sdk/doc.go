// Package sdk is everything a Foresight stage plugin and the host share: the stage interfaces
// (Producer, Filter, Scorer, Admitter, Picker) over plain Go types (Cycle, Endpoint, Request,
// Prediction, Sample), parameter handling (Params, DecodeParams), seeded randomness (Rand), the
// heuristics shared by several stages, and the plumbing a plugin process needs: the go-plugin
// handshake, the gRPC client and server shims that translate between these types and the wire
// contracts in proto/foresight/v1, and the Serve helpers.
//
// A plugin's main is one call:
//
//	func main() { sdk.ServeScorer(myscorer.New(), version) }
//
// Its logic lives in an internal package written against this package only: no gRPC, no go-plugin.
package sdk
