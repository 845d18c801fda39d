package sdk

import (
	"context"

	"google.golang.org/grpc"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// Server shims: they translate wire requests into sdk calls and answers back, nothing more.

type pluginServer struct {
	pb.UnimplementedPluginServiceServer
	impl  Plugin
	stage Stage
	ver   string
}

func (s *pluginServer) GetInfo(context.Context, *pb.GetInfoRequest) (*pb.GetInfoResponse, error) {
	info := Info{Type: s.impl.Type(), Stage: s.stage, Version: s.ver, Description: s.impl.Description()}
	if r, ok := s.impl.(Reader); ok {
		info.Reads = r.Reads()
	}
	return InfoToProto(info), nil
}

func (s *pluginServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	if err := s.impl.Configure(req.GetParameters()); err != nil {
		return &pb.ConfigureResponse{Status: statusToProto(InvalidArgument(err))}, nil
	}
	return &pb.ConfigureResponse{}, nil
}

// decodeCycles converts a batch from the wire; a malformed cycle becomes that cycle's error.
func decodeCycles(in []*pb.Cycle) ([]*Cycle, []error) {
	cycles, errs := make([]*Cycle, len(in)), make([]error, len(in))
	for i, pc := range in {
		cycles[i], errs[i] = CycleFromProto(pc)
	}
	return cycles, errs
}

// serveEach answers every decodable cycle with call and every malformed one with its decoding error.
func serveEach[T any](in []*pb.Cycle, call func(i int, c *Cycle) (T, error)) []Result[T] {
	cycles, errs := decodeCycles(in)
	out := make([]Result[T], len(in))
	for i, c := range cycles {
		if errs[i] != nil {
			out[i].Err = errs[i]
			continue
		}
		out[i] = guard(func() (T, error) { return call(i, c) })
	}
	return out
}

type producerServer struct {
	pb.UnimplementedProducerServiceServer
	impl Producer
}

func (s *producerServer) Produce(stream grpc.BidiStreamingServer[pb.ProduceRequest, pb.ProduceResponse]) error {
	return serveStream(stream, s.produce)
}

func (s *producerServer) produce(ctx context.Context, req *pb.ProduceRequest) *pb.ProduceResponse {
	results := serveEach(req.GetCycles(), func(_ int, c *Cycle) ([]Prediction, error) { return s.impl.Produce(ctx, c) })
	out := &pb.ProduceResponse{Results: make([]*pb.ProduceResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.ProduceResult{Status: statusToProto(r.Err)}
		if r.Err == nil {
			out.Results[i].Predictions = PredictionsToProto(r.Value, func(p *Prediction) Prediction { return *p })
		}
	}
	return out
}

func (s *producerServer) Observe(ctx context.Context, req *pb.ObserveRequest) (*pb.ObserveResponse, error) {
	samples := make([]Sample, len(req.GetSamples()))
	for i, p := range req.GetSamples() {
		samples[i] = SampleFromProto(p)
	}
	r := guard(func() (ObserveResult, error) { return s.impl.Observe(ctx, samples) })
	return &pb.ObserveResponse{Status: statusToProto(r.Err), Accepted: uint32(max(r.Value.Accepted, 0)),
		Stats: PredictorStatsToProto(r.Value.Stats)}, nil
}

type filterServer struct {
	pb.UnimplementedFilterServiceServer
	impl Filter
}

func (s *filterServer) Filter(stream grpc.BidiStreamingServer[pb.FilterRequest, pb.FilterResponse]) error {
	return serveStream(stream, s.filter)
}

func (s *filterServer) filter(ctx context.Context, req *pb.FilterRequest) *pb.FilterResponse {
	results := serveEach(req.GetCycles(), func(_ int, c *Cycle) (FilterVerdict, error) { return s.impl.Filter(ctx, c) })
	out := &pb.FilterResponse{Results: make([]*pb.FilterResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.FilterResult{Status: statusToProto(r.Err), Kept: indicesToProto(r.Value.Kept), Reason: r.Value.Reason}
	}
	return out
}

type scorerServer struct {
	pb.UnimplementedScorerServiceServer
	impl Scorer
}

func (s *scorerServer) Score(stream grpc.BidiStreamingServer[pb.ScoreRequest, pb.ScoreResponse]) error {
	return serveStream(stream, s.score)
}

func (s *scorerServer) score(ctx context.Context, req *pb.ScoreRequest) *pb.ScoreResponse {
	results := serveEach(req.GetCycles(), func(_ int, c *Cycle) ([]float64, error) { return s.impl.Score(ctx, c) })
	out := &pb.ScoreResponse{Results: make([]*pb.ScoreResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.ScoreResult{Status: statusToProto(r.Err), Scores: r.Value}
	}
	return out
}

type admitterServer struct {
	pb.UnimplementedAdmitterServiceServer
	impl Admitter
}

func (s *admitterServer) Admit(stream grpc.BidiStreamingServer[pb.AdmitRequest, pb.AdmitResponse]) error {
	return serveStream(stream, s.admit)
}

func (s *admitterServer) admit(ctx context.Context, req *pb.AdmitRequest) *pb.AdmitResponse {
	results := serveEach(req.GetCycles(), func(_ int, c *Cycle) (AdmitVerdict, error) { return s.impl.Admit(ctx, c) })
	out := &pb.AdmitResponse{Results: make([]*pb.AdmitResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.AdmitResult{Status: statusToProto(r.Err), Admitted: r.Value.Admitted, Reason: r.Value.Reason}
	}
	return out
}

type pickerServer struct {
	pb.UnimplementedPickerServiceServer
	impl Picker
}

func (s *pickerServer) Pick(stream grpc.BidiStreamingServer[pb.PickRequest, pb.PickResponse]) error {
	return serveStream(stream, s.pick)
}

func (s *pickerServer) pick(ctx context.Context, req *pb.PickRequest) *pb.PickResponse {
	scores := req.GetScores()
	results := serveEach(req.GetCycles(), func(i int, c *Cycle) ([]int, error) {
		if i >= len(scores) {
			return nil, &StatusError{Code: CodeInvalidArgument, Message: "pick request has fewer score sets than cycles"}
		}
		return s.impl.Pick(ctx, c, scores[i].GetValues())
	})
	out := &pb.PickResponse{Results: make([]*pb.PickResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.PickResult{Status: statusToProto(r.Err), Order: indicesToProto(r.Value)}
	}
	return out
}
