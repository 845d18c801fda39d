package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/grpc"

	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// Server shims: they translate wire requests into sdk calls and answers back, nothing more.

// result is one cycle's answer within a batch: a value, or the stage's error for that cycle.
type result[T any] struct {
	value T
	err   error
}

// guard runs call, turning a panic into that cycle's error so one bad cycle cannot take down the
// plugin process, and giving a plain error the stage-error status it has on the wire.
func guard[T any](call func() (T, error)) result[T] {
	var r result[T]
	r.err = protect(func() (err error) {
		r.value, err = call()
		return err
	})
	return r
}

// protect runs call, turning a panic into a *StatusError and a plain error into one with
// CodeError that keeps the error as its cause. The host's in-process stages (transport.Local) are
// guarded by it too, so a stage fails the same way in-process and over the wire.
func protect(call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &StatusError{Code: CodeError, Message: fmt.Sprintf("stage panicked: %v", p)}
		}
	}()
	err = call()
	var se *StatusError
	if err != nil && !errors.As(err, &se) {
		err = &StatusError{Code: CodeError, Message: err.Error(), cause: err}
	}
	return err
}

// serveStream answers each request of a stage stream with handle, in order, until the host closes
// it. Stage RPCs are bidirectional streams that carry one response per request, in order; the host
// keeps them open across calls (see package transport).
func serveStream[Req, Resp any](s grpc.BidiStreamingServer[Req, Resp], handle func(context.Context, *Req) *Resp) error {
	for {
		req, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(handle(s.Context(), req)); err != nil {
			return err
		}
	}
}

type pluginServer struct {
	pb.UnimplementedPluginServiceServer
	reg   *instances
	stage Stage
	ver   string
}

func (s *pluginServer) GetInfo(context.Context, *pb.GetInfoRequest) (*pb.GetInfoResponse, error) {
	impl := s.reg.def
	info := Info{Type: impl.Type(), Stage: s.stage, Version: s.ver, Description: impl.Description(), MultiInstance: s.reg.multi(),
		Rounds: s.stage == StagePicker} // every picker this SDK serves places rounds (PickRound)
	if r, ok := impl.(Reader); ok {
		info.Reads = r.Reads()
	}
	return infoToProto(info), nil
}

func (s *pluginServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	if err := s.reg.configure(req.GetInstance(), req.GetParameters()); err != nil {
		return &pb.ConfigureResponse{Status: statusToProto(InvalidArgument(err))}, nil
	}
	resp := &pb.ConfigureResponse{}
	if impl, err := s.reg.get(req.GetInstance()); err == nil {
		if a, ok := impl.(UnsheddableAdmitter); ok {
			resp.AdmitsUnsheddable = a.AdmitsUnsheddable()
		}
	}
	return resp, nil
}

func (s *pluginServer) DropInstance(_ context.Context, req *pb.DropInstanceRequest) (*pb.DropInstanceResponse, error) {
	s.reg.drop(req.GetInstance())
	return &pb.DropInstanceResponse{}, nil
}

// decodeCycles converts a batch from the wire; a malformed cycle becomes that cycle's error.
func decodeCycles(in []*pb.Cycle) ([]*Cycle, []error) {
	cycles, errs := make([]*Cycle, len(in)), make([]error, len(in))
	for i, pc := range in {
		cycles[i], errs[i] = cycleFromProto(pc)
	}
	return cycles, errs
}

// serveEach answers every decodable cycle with the instance called name, through call, and every
// malformed one with its decoding error; an unknown instance is every cycle's error.
func serveEach[S, T any](reg *instances, name string, in []*pb.Cycle, call func(impl S, i int, c *Cycle) (T, error)) []result[T] {
	out := make([]result[T], len(in))
	impl, err := stageOf[S](reg, name)
	if err != nil {
		for i := range out {
			out[i].err = err
		}
		return out
	}
	cycles, errs := decodeCycles(in)
	for i, c := range cycles {
		if errs[i] != nil {
			out[i].err = errs[i]
			continue
		}
		out[i] = guard(func() (T, error) { return call(impl, i, c) })
	}
	return out
}

type producerServer struct {
	pb.UnimplementedProducerServiceServer
	reg *instances
}

func (s *producerServer) Produce(stream grpc.BidiStreamingServer[pb.ProduceRequest, pb.ProduceResponse]) error {
	return serveStream(stream, s.produce)
}

func (s *producerServer) produce(ctx context.Context, req *pb.ProduceRequest) *pb.ProduceResponse {
	results := serveEach(s.reg, req.GetInstance(), req.GetCycles(), func(impl Producer, _ int, c *Cycle) ([]Prediction, error) {
		return impl.Produce(ctx, c)
	})
	out := &pb.ProduceResponse{Results: make([]*pb.ProduceResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.ProduceResult{Status: statusToProto(r.err)}
		if r.err == nil {
			out.Results[i].Predictions = predictionsToProto(r.value)
		}
	}
	return out
}

func (s *producerServer) Observe(ctx context.Context, req *pb.ObserveRequest) (*pb.ObserveResponse, error) {
	samples := make([]Sample, len(req.GetSamples()))
	for i, p := range req.GetSamples() {
		samples[i] = sampleFromProto(p)
	}
	r := guard(func() (ObserveResult, error) {
		impl, err := stageOf[Producer](s.reg, req.GetInstance())
		if err != nil {
			return ObserveResult{}, err
		}
		return impl.Observe(ctx, samples)
	})
	return &pb.ObserveResponse{Status: statusToProto(r.err), Accepted: uint32(max(r.value.Accepted, 0)),
		Stats: predictorStatsToProto(r.value.Stats)}, nil
}

type filterServer struct {
	pb.UnimplementedFilterServiceServer
	reg *instances
}

func (s *filterServer) Filter(stream grpc.BidiStreamingServer[pb.FilterRequest, pb.FilterResponse]) error {
	return serveStream(stream, s.filter)
}

func (s *filterServer) filter(ctx context.Context, req *pb.FilterRequest) *pb.FilterResponse {
	if len(req.GetChain()) > 0 {
		return s.filterChain(ctx, req)
	}
	results := serveEach(s.reg, req.GetInstance(), req.GetCycles(), func(impl Filter, _ int, c *Cycle) (FilterVerdict, error) {
		return impl.Filter(ctx, c)
	})
	out := &pb.FilterResponse{Results: make([]*pb.FilterResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.FilterResult{Status: statusToProto(r.err), Kept: indicesToProto(r.value.Kept), Reason: r.value.Reason}
	}
	return out
}

type scorerServer struct {
	pb.UnimplementedScorerServiceServer
	reg *instances
}

func (s *scorerServer) Score(stream grpc.BidiStreamingServer[pb.ScoreRequest, pb.ScoreResponse]) error {
	return serveStream(stream, s.score)
}

func (s *scorerServer) score(ctx context.Context, req *pb.ScoreRequest) *pb.ScoreResponse {
	type scored struct{ scores, after []float64 }
	results := serveEach(s.reg, req.GetInstance(), req.GetCycles(), func(impl Scorer, _ int, c *Cycle) (scored, error) {
		scores, err := impl.Score(ctx, c)
		if err != nil {
			return scored{}, err
		}
		after, err := AfterScores(ctx, impl, c, scores)
		return scored{scores, after}, err
	})
	out := &pb.ScoreResponse{Results: make([]*pb.ScoreResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.ScoreResult{Status: statusToProto(r.err), Scores: r.value.scores, ScoresAfter: r.value.after}
	}
	return out
}

type admitterServer struct {
	pb.UnimplementedAdmitterServiceServer
	reg *instances
}

func (s *admitterServer) Admit(stream grpc.BidiStreamingServer[pb.AdmitRequest, pb.AdmitResponse]) error {
	return serveStream(stream, s.admit)
}

func (s *admitterServer) admit(ctx context.Context, req *pb.AdmitRequest) *pb.AdmitResponse {
	results := serveEach(s.reg, req.GetInstance(), req.GetCycles(), func(impl Admitter, _ int, c *Cycle) (AdmitVerdict, error) {
		return impl.Admit(ctx, c)
	})
	out := &pb.AdmitResponse{Results: make([]*pb.AdmitResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.AdmitResult{Status: statusToProto(r.err), Admitted: r.value.Admitted, Reason: r.value.Reason}
	}
	return out
}

type pickerServer struct {
	pb.UnimplementedPickerServiceServer
	reg *instances
}

func (s *pickerServer) Pick(stream grpc.BidiStreamingServer[pb.PickRequest, pb.PickResponse]) error {
	return serveStream(stream, s.pick)
}

func (s *pickerServer) pick(ctx context.Context, req *pb.PickRequest) *pb.PickResponse {
	in := req.GetCycles()
	results := make([]result[[]int], len(in))
	impl, err := stageOf[Picker](s.reg, req.GetInstance())
	if err != nil {
		for i := range results {
			results[i].err = err
		}
	} else {
		cycles, errs := decodeCycles(in)
		scores, after := scoreValues(req.GetScores()), scoreValues(req.GetScoresAfter())
		PickRound(cycles, scores, after, func(i int, c *Cycle, s []float64) []int {
			switch {
			case errs[i] != nil:
				results[i].err = errs[i]
			case i >= len(scores):
				results[i].err = &StatusError{Code: CodeInvalidArgument, Message: "pick request has fewer score sets than cycles"}
			default:
				results[i] = guard(func() ([]int, error) { return impl.Pick(ctx, c, s) })
			}
			if results[i].err != nil || wire.CheckIndices(results[i].value, len(c.Endpoints)) != nil {
				return nil
			}
			return results[i].value
		})
	}
	out := &pb.PickResponse{Results: make([]*pb.PickResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.PickResult{Status: statusToProto(r.err), Order: indicesToProto(r.value)}
	}
	return out
}

// scoreValues returns the values of each score set.
func scoreValues(in []*pb.Scores) [][]float64 {
	out := make([][]float64, len(in))
	for i, s := range in {
		out[i] = s.GetValues()
	}
	return out
}

type detectorServer struct {
	pb.UnimplementedSaturationDetectorServiceServer
	reg *instances
}

func (s *detectorServer) Detect(stream grpc.BidiStreamingServer[pb.DetectRequest, pb.DetectResponse]) error {
	return serveStream(stream, s.detect)
}

func (s *detectorServer) detect(ctx context.Context, req *pb.DetectRequest) *pb.DetectResponse {
	results := serveEach(s.reg, req.GetInstance(), req.GetCycles(), func(impl Detector, _ int, c *Cycle) (SaturationVerdict, error) {
		v, err := impl.Detect(ctx, c)
		switch {
		case err != nil:
		case len(v.Room) != len(c.Endpoints):
			err = fmt.Errorf("detector returned %d room counts for %d endpoints", len(v.Room), len(c.Endpoints))
		case len(v.Slots) != 0 && len(v.Slots) != len(c.Endpoints):
			err = fmt.Errorf("detector returned %d slot counts for %d endpoints", len(v.Slots), len(c.Endpoints))
		default:
			if i := slices.IndexFunc(v.Slots, func(n int) bool { return n < 0 }); i >= 0 {
				err = fmt.Errorf("detector returned %d slots for endpoint %d: want 0 or more", v.Slots[i], i)
			}
		}
		return v, err
	})
	out := &pb.DetectResponse{Results: make([]*pb.DetectResult, len(results))}
	for i, r := range results {
		out.Results[i] = &pb.DetectResult{Status: statusToProto(r.err), Room: countsToProto(r.value.Room),
			WaitMs: r.value.WaitMs, Reason: r.value.Reason, Slots: countsToProto(r.value.Slots)}
	}
	return out
}

type orderServer struct {
	pb.UnimplementedOrderServiceServer
	reg *instances
}

func (s *orderServer) Order(stream grpc.BidiStreamingServer[pb.OrderRequest, pb.OrderResponse]) error {
	return serveStream(stream, s.order)
}

func (s *orderServer) order(ctx context.Context, req *pb.OrderRequest) *pb.OrderResponse {
	results := serveEach(s.reg, req.GetInstance(), req.GetCycles(), func(impl Orderer, _ int, c *Cycle) (OrderKey, error) {
		return impl.Order(ctx, c)
	})
	out := &pb.OrderResponse{Results: make([]*pb.OrderResult, len(results))}
	for i, r := range results {
		out.Results[i] = orderKeyToProto(r.value)
		out.Results[i].Status = statusToProto(r.err)
	}
	return out
}
