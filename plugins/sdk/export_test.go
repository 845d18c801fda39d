package sdk

import "github.com/hashicorp/go-plugin"

// Exported for the round-trip tests in package sdk_test, which run both sides of the protocol.

// NewServerPlugin returns the plugin's half of the go-plugin glue that ServeProtocol serves.
func NewServerPlugin(stage Stage, impl Plugin, version string) plugin.GRPCPlugin {
	return &grpcServer{stage: stage, reg: singleInstance(impl), version: version}
}

// NewMultiServerPlugin returns the plugin's half that ServeInstances serves.
func NewMultiServerPlugin(stage Stage, newImpl func() Plugin, version string) plugin.GRPCPlugin {
	return &grpcServer{stage: stage, reg: multiInstance(newImpl), version: version}
}

// CycleFromProto is the plugin side's decoding of a wire cycle.
var CycleFromProto = cycleFromProto

// PredictionsToProto is the plugin side's encoding of a producer's answer.
var PredictionsToProto = predictionsToProto
