package transport

import (
	"context"
	"errors"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
)

// GRPCPlugin is the host's half of the go-plugin glue for one stage: it returns the stage's client
// (see NewClient). The plugin's half is in package sdk, behind the Serve… helpers.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Stage sdk.Stage
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer fails: the host serves no stage.
func (p *GRPCPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("the host's side of a stage serves nothing")
}

// GRPCClient returns the stage client over c.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return NewClient(p.Stage, c)
}

// HostPlugins is the plugin set a host offers for sdk.ProtocolVersion: one entry per stage, keyed
// by the stage name, so the host dispenses the stage its config slot expects and then checks GetInfo.
func HostPlugins() map[int]plugin.PluginSet {
	set := plugin.PluginSet{}
	for s := sdk.StageProducer; s <= sdk.StageOrder; s++ {
		set[s.String()] = &GRPCPlugin{Stage: s}
	}
	return map[int]plugin.PluginSet{sdk.ProtocolVersion: set}
}

// DialOptions are the host side's gRPC options, which the plugin side sets too: fixed
// flow-control windows (between two processes on one machine there is no bandwidth-delay product
// to probe, so large fixed windows turn the probing off and make window updates rare), and a
// buffer pool with a tier at every power of two, for the transport and the protobuf codec
// (wire.Codec), whose reused buffers are cleared at no more than twice a message's size where
// gRPC's default clears a whole MiB for any message over 32 KiB.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(wire.StreamWindow), grpc.WithInitialConnWindowSize(wire.ConnWindow),
		experimental.WithBufferPool(wire.BufferPool), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(wire.Codec{}))}
}
