// Package transport is the host's side of the plugin protocol: how the host's cycles reach a stage
// and its answers come back. It holds the go-plugin client half (HostPlugins, GRPCPlugin,
// DialOptions), the typed stage clients over gRPC (NewClient) with their pooled streams, the batch
// interfaces through which the host calls every stage (BatchFilter and the others, answering
// Results) and Local, which puts an in-process stage behind them, and the host's half of the wire
// form: encoding cycles (CycleToProto, Seal) and projecting them onto what a stage declares it
// reads (ReadPaths, ProjectCycle).
//
// The package is named for what it is rather than "client": the host reaches in-process stages
// through it too, and "client" is the name host code gives its variables and helpers.
//
// Plugin authors do not import it: a plugin is written against package sdk alone, whose Serve…
// helpers hold the plugin's side of the protocol.
package transport
