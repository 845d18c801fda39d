package transport

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"google.golang.org/grpc"
)

// Client shims: they translate sdk calls into wire requests and answers back, and check that a
// plugin's answer fits the batch it was asked about (the host never trusts a plugin's indices).

// PluginClient is the part of every plugin client that speaks PluginService.
type PluginClient struct {
	plugin pb.PluginServiceClient
	reads  atomic.Pointer[projection] // from GetInfo: what the stage's cycles carry
}

// Info asks the plugin what it is. From then on the client sends only the cycle fields the plugin
// declared it reads; an invalid declaration is an error.
func (c *PluginClient) Info(ctx context.Context) (sdk.Info, error) {
	resp, err := c.plugin.GetInfo(ctx, &pb.GetInfoRequest{})
	if err != nil {
		return sdk.Info{}, err
	}
	info := infoFromProto(resp)
	p, err := compileReads(info.Reads)
	if err != nil {
		return info, fmt.Errorf("the plugin declares %w", err)
	}
	c.reads.Store(p)
	return info, nil
}

// Configure sends the parameters (a JSON object); a rejection is a *sdk.StatusError naming the
// problem.
func (c *PluginClient) Configure(ctx context.Context, params []byte) error {
	resp, err := c.plugin.Configure(ctx, &pb.ConfigureRequest{Parameters: params})
	if err != nil {
		return err
	}
	return statusFromProto(resp.GetStatus())
}

// Configurer is what every stage client offers besides its stage calls.
type Configurer interface {
	Info(ctx context.Context) (sdk.Info, error)
	Configure(ctx context.Context, params []byte) error
}

// NewClient returns the client for stage over conn, which implements Configurer and the stage's
// Batch interface (e.g. *FilterClient for sdk.StageFilter).
func NewClient(stage sdk.Stage, conn grpc.ClientConnInterface) (Configurer, error) {
	pc := &PluginClient{plugin: pb.NewPluginServiceClient(conn)}
	switch stage {
	case sdk.StageProducer:
		c := pb.NewProducerServiceClient(conn)
		return &ProducerClient{pc, c, streamPool[pb.ProduceRequest, pb.ProduceResponse]{open: c.Produce}}, nil
	case sdk.StageFilter:
		return &FilterClient{pc, streamPool[pb.FilterRequest, pb.FilterResponse]{open: pb.NewFilterServiceClient(conn).Filter}}, nil
	case sdk.StageScorer:
		return &ScorerClient{pc, streamPool[pb.ScoreRequest, pb.ScoreResponse]{open: pb.NewScorerServiceClient(conn).Score}}, nil
	case sdk.StageAdmitter:
		return &AdmitterClient{pc, streamPool[pb.AdmitRequest, pb.AdmitResponse]{open: pb.NewAdmitterServiceClient(conn).Admit}}, nil
	case sdk.StagePicker:
		return &PickerClient{pc, streamPool[pb.PickRequest, pb.PickResponse]{open: pb.NewPickerServiceClient(conn).Pick}}, nil
	}
	return nil, fmt.Errorf("no client for stage %v", stage)
}

// cycles returns the wire form of cycles as this plugin receives them (see sdk.Reader).
func (c *PluginClient) cycles(cycles []*sdk.Cycle) []*pb.Cycle {
	p := c.reads.Load()
	out := make([]*pb.Cycle, len(cycles))
	for i, cy := range cycles {
		out[i] = p.apply(encodingOf(cy))
	}
	return out
}

// collect converts a batch answer, checking it has one result per cycle; conv may reject one result.
func collect[R interface{ GetStatus() *pb.Status }, T any](cycles []*sdk.Cycle, results []R, conv func(c *sdk.Cycle, r R) (T, error)) ([]Result[T], error) {
	if len(results) != len(cycles) {
		return nil, fmt.Errorf("plugin answered %d results for %d cycles", len(results), len(cycles))
	}
	out := make([]Result[T], len(results))
	for i, r := range results {
		if err := statusFromProto(r.GetStatus()); err != nil {
			out[i].Err = err
			continue
		}
		out[i].Value, out[i].Err = conv(cycles[i], r)
	}
	return out, nil
}

// ProducerClient calls a producer plugin.
type ProducerClient struct {
	*PluginClient
	stage   pb.ProducerServiceClient
	produce streamPool[pb.ProduceRequest, pb.ProduceResponse]
}

// ProduceBatch asks for predictions for every cycle.
func (c *ProducerClient) ProduceBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[[]sdk.Prediction], error) {
	resp, err := c.produce.call(ctx, &pb.ProduceRequest{Cycles: c.cycles(cycles)})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.ProduceResult) ([]sdk.Prediction, error) {
		return predictionsFromProto(r.GetPredictions(), len(cy.Endpoints))
	})
}

// Observe sends finished-request samples and returns how many the producer accepted, with its
// prediction quality if it reports one.
func (c *ProducerClient) Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	req := &pb.ObserveRequest{Samples: make([]*pb.Sample, len(samples))}
	for i := range samples {
		req.Samples[i] = sampleToProto(&samples[i])
	}
	resp, err := c.stage.Observe(ctx, req)
	if err != nil {
		return sdk.ObserveResult{}, err
	}
	return sdk.ObserveResult{Accepted: int(resp.GetAccepted()), Stats: predictorStatsFromProto(resp.GetStats())},
		statusFromProto(resp.GetStatus())
}

// FilterClient calls a filter plugin.
type FilterClient struct {
	*PluginClient
	filter streamPool[pb.FilterRequest, pb.FilterResponse]
}

// FilterBatch asks which endpoints to keep for every cycle.
func (c *FilterClient) FilterBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.FilterVerdict], error) {
	resp, err := c.filter.call(ctx, &pb.FilterRequest{Cycles: c.cycles(cycles)})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.FilterResult) (sdk.FilterVerdict, error) {
		kept, err := indicesFromProto(r.GetKept(), len(cy.Endpoints))
		return sdk.FilterVerdict{Kept: kept, Reason: r.GetReason()}, err
	})
}

// ScorerClient calls a scorer plugin.
type ScorerClient struct {
	*PluginClient
	score streamPool[pb.ScoreRequest, pb.ScoreResponse]
}

// ScoreBatch asks for scores for every cycle.
func (c *ScorerClient) ScoreBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[[]float64], error) {
	resp, err := c.score.call(ctx, &pb.ScoreRequest{Cycles: c.cycles(cycles)})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.ScoreResult) ([]float64, error) {
		return r.GetScores(), checkScores(r.GetScores(), len(cy.Endpoints))
	})
}

// AdmitterClient calls an admitter plugin.
type AdmitterClient struct {
	*PluginClient
	admit streamPool[pb.AdmitRequest, pb.AdmitResponse]
}

// AdmitBatch asks for a verdict for every cycle.
func (c *AdmitterClient) AdmitBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.AdmitVerdict], error) {
	resp, err := c.admit.call(ctx, &pb.AdmitRequest{Cycles: c.cycles(cycles)})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(_ *sdk.Cycle, r *pb.AdmitResult) (sdk.AdmitVerdict, error) {
		return sdk.AdmitVerdict{Admitted: r.GetAdmitted(), Reason: r.GetReason()}, nil
	})
}

// PickerClient calls a picker plugin.
type PickerClient struct {
	*PluginClient
	pick streamPool[pb.PickRequest, pb.PickResponse]
}

// PickBatch asks for a preference order for every cycle; scores[i] belongs to cycles[i].
func (c *PickerClient) PickBatch(ctx context.Context, cycles []*sdk.Cycle, scores [][]float64) ([]Result[[]int], error) {
	if len(scores) != len(cycles) {
		return nil, fmt.Errorf("pick batch has %d score sets for %d cycles", len(scores), len(cycles))
	}
	req := &pb.PickRequest{Cycles: c.cycles(cycles), Scores: make([]*pb.Scores, len(scores))}
	for i, s := range scores {
		req.Scores[i] = &pb.Scores{Values: s}
	}
	resp, err := c.pick.call(ctx, req)
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.PickResult) ([]int, error) {
		return indicesFromProto(r.GetOrder(), len(cy.Endpoints))
	})
}
