package transport

import (
	"context"
	"errors"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
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

// DialWindows are the host side's gRPC options for the fixed flow-control windows that the plugin
// side sets too: between two processes on one machine there is no bandwidth-delay product to
// probe, so large fixed windows turn the probing off and make window updates rare.
func DialWindows() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(wire.StreamWindow), grpc.WithInitialConnWindowSize(wire.ConnWindow)}
}
