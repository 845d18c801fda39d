// Command oldpicker is a picker plugin written against the protocol as it was before rounds, with
// the generated gRPC code and go-plugin alone (no SDK runner): GetInfo reports no `rounds`, and
// Pick answers every cycle of a batch on its own, by score (ties by position). The end-to-end
// test checks that the host still decides with it when it decides requests in rounds.
package main

import (
	"cmp"
	"context"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

var version = "1.0.0"

type info struct {
	pb.UnimplementedPluginServiceServer
}

func (info) GetInfo(context.Context, *pb.GetInfoRequest) (*pb.GetInfoResponse, error) {
	return &pb.GetInfoResponse{Type: "old-max-score-picker", Stage: pb.Stage_STAGE_PICKER, Version: version,
		Description: "orders by score, one cycle at a time, as before rounds"}, nil
}

func (info) Configure(context.Context, *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	return &pb.ConfigureResponse{}, nil
}

type picker struct {
	pb.UnimplementedPickerServiceServer
}

func (picker) Pick(s grpc.BidiStreamingServer[pb.PickRequest, pb.PickResponse]) error {
	for {
		req, err := s.Recv()
		if err != nil {
			return err
		}
		resp := &pb.PickResponse{}
		for i := range req.GetCycles() {
			scores := req.GetScores()[i].GetValues()
			order := make([]uint32, len(scores))
			for k := range order {
				order[k] = uint32(k)
			}
			slices.SortStableFunc(order, func(a, b uint32) int { return cmp.Compare(scores[b], scores[a]) })
			resp.Results = append(resp.Results, &pb.PickResult{Order: order})
		}
		if err := s.Send(resp); err != nil {
			return err
		}
	}
}

type grpcPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServiceServer(s, info{})
	pb.RegisterPickerServiceServer(s, picker{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil // the host's side is the SDK's transport
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         plugin.PluginSet{"picker": grpcPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
