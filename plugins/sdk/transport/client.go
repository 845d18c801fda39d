package transport

import (
	"context"
	"fmt"
	"math"
	"slices"
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
	// instance names the instance of a multi-instance plugin that this client configures and
	// calls ("" the default instance; see Bind).
	instance string
	// unsheddable is the last Configure's admits_unsheddable: the admitter admits every request
	// of priority 0 or above unread, so AdmitterClient answers those itself.
	unsheddable atomic.Bool
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
	resp, err := c.plugin.Configure(ctx, &pb.ConfigureRequest{Parameters: params, Instance: c.instance})
	if err != nil {
		return err
	}
	if err := statusFromProto(resp.GetStatus()); err != nil {
		return err
	}
	c.unsheddable.Store(resp.GetAdmitsUnsheddable())
	return nil
}

// Drop tells a multi-instance plugin to forget the client's instance.
func (c *PluginClient) Drop(ctx context.Context) error {
	_, err := c.plugin.DropInstance(ctx, &pb.DropInstanceRequest{Instance: c.instance})
	return err
}

// bind returns a client of the same plugin for the named instance, knowing what c knows of the
// cycle fields the plugin reads.
func (c *PluginClient) bind(instance string) *PluginClient {
	b := &PluginClient{plugin: c.plugin, instance: instance}
	b.reads.Store(c.reads.Load())
	return b
}

// Bind returns a client for the named instance of the multi-instance plugin that c (from
// NewClient) calls: the same type as c, sharing its connection and open streams, configuring and
// calling that instance only.
func Bind(c Configurer, instance string) Configurer {
	switch c := c.(type) {
	case *ProducerClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	case *FilterClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	case *ScorerClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	case *AdmitterClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	case *PickerClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	case *DetectorClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	case *OrderClient:
		b := *c
		b.PluginClient = c.bind(instance)
		return &b
	}
	return c
}

// Configurer is what every stage client offers besides its stage calls.
type Configurer interface {
	Info(ctx context.Context) (sdk.Info, error)
	Configure(ctx context.Context, params []byte) error
	// Drop forgets the client's instance in a multi-instance plugin (see Bind).
	Drop(ctx context.Context) error
}

// NewClient returns the client for stage over conn, which implements Configurer and the stage's
// Batch interface (e.g. *FilterClient for sdk.StageFilter).
func NewClient(stage sdk.Stage, conn grpc.ClientConnInterface) (Configurer, error) {
	pc := &PluginClient{plugin: pb.NewPluginServiceClient(conn)}
	switch stage {
	case sdk.StageProducer:
		c := pb.NewProducerServiceClient(conn)
		return &ProducerClient{pc, c, &streamPool[pb.ProduceRequest, pb.ProduceResponse]{open: c.Produce}}, nil
	case sdk.StageFilter:
		return &FilterClient{pc, &streamPool[pb.FilterRequest, pb.FilterResponse]{open: pb.NewFilterServiceClient(conn).Filter}}, nil
	case sdk.StageScorer:
		return &ScorerClient{pc, &streamPool[pb.ScoreRequest, pb.ScoreResponse]{open: pb.NewScorerServiceClient(conn).Score}}, nil
	case sdk.StageAdmitter:
		return &AdmitterClient{pc, &streamPool[pb.AdmitRequest, pb.AdmitResponse]{open: pb.NewAdmitterServiceClient(conn).Admit}}, nil
	case sdk.StagePicker:
		return &PickerClient{pc, &streamPool[pb.PickRequest, pb.PickResponse]{open: pb.NewPickerServiceClient(conn).Pick}}, nil
	case sdk.StageDetector:
		return &DetectorClient{pc, &streamPool[pb.DetectRequest, pb.DetectResponse]{open: pb.NewSaturationDetectorServiceClient(conn).Detect}}, nil
	case sdk.StageOrder:
		return &OrderClient{pc, &streamPool[pb.OrderRequest, pb.OrderResponse]{open: pb.NewOrderServiceClient(conn).Order}}, nil
	}
	return nil, fmt.Errorf("no client for stage %v", stage)
}

// cycles returns the wire form of cycles as this plugin receives them (see sdk.Reader).
func (c *PluginClient) cycles(cycles []*sdk.Cycle) []*pb.Cycle {
	p := c.reads.Load()
	out := make([]*pb.Cycle, len(cycles))
	for i, cy := range cycles {
		out[i] = p.apply(encodingOf(cy), cy.Round)
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
	produce *streamPool[pb.ProduceRequest, pb.ProduceResponse]
}

// ProduceBatch asks for predictions for every cycle.
func (c *ProducerClient) ProduceBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[[]sdk.Prediction], error) {
	resp, err := c.produce.call(ctx, &pb.ProduceRequest{Cycles: c.cycles(cycles), Instance: c.instance})
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
	req := &pb.ObserveRequest{Samples: make([]*pb.Sample, len(samples)), Instance: c.instance}
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
	filter *streamPool[pb.FilterRequest, pb.FilterResponse]
}

// FilterBatch asks which endpoints to keep for every cycle.
func (c *FilterClient) FilterBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.FilterVerdict], error) {
	resp, err := c.filter.call(ctx, &pb.FilterRequest{Cycles: c.cycles(cycles), Instance: c.instance})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.FilterResult) (sdk.FilterVerdict, error) {
		kept, err := indicesFromProto(r.GetKept(), len(cy.Endpoints))
		return sdk.FilterVerdict{Kept: kept, Reason: r.GetReason()}, err
	})
}

// FilterChain makes a fused call to a multi-instance filter plugin: the instances of chain filter
// every cycle one after the other, each seeing what the one before it kept. It returns, per cycle,
// one result per step in chain order; a step's kept indices are positions in the cycle as sent. A
// step that failed (in the plugin or its answer here) is that step's error and keeps what it was
// given; the chain ends early after a step that kept no endpoint. The returned error means the call
// as a whole failed.
func (c *FilterClient) FilterChain(ctx context.Context, cycles []*sdk.Cycle, chain []string) ([][]Result[sdk.FilterVerdict], error) {
	resp, err := c.filter.call(ctx, &pb.FilterRequest{Cycles: c.cycles(cycles), Chain: chain})
	if err != nil {
		return nil, err
	}
	if len(resp.GetChains()) != len(cycles) {
		return nil, fmt.Errorf("plugin answered %d chains for %d cycles", len(resp.GetChains()), len(cycles))
	}
	out := make([][]Result[sdk.FilterVerdict], len(cycles))
	for i, ch := range resp.GetChains() {
		out[i] = chainSteps(ch.GetSteps(), len(chain), len(cycles[i].Endpoints))
	}
	return out, nil
}

// chainSteps checks one cycle's steps of a fused filter call: at most one per instance, each
// keeping a subset of what the step before kept (all n endpoints before the first). A step whose
// answer breaks that is an invalid answer, and so is every step after it, since the plugin
// narrowed its cycle differently from the host.
func chainSteps(steps []*pb.FilterResult, chain, n int) []Result[sdk.FilterVerdict] {
	if len(steps) > chain {
		steps = steps[:chain]
	}
	out := make([]Result[sdk.FilterVerdict], len(steps))
	in := make([]bool, n) // what the step may keep
	for i := range in {
		in[i] = true
	}
	var broken error
	for k, r := range steps {
		if broken != nil {
			out[k].Err = broken
			continue
		}
		if err := statusFromProto(r.GetStatus()); err != nil {
			out[k].Err = err
			continue
		}
		kept, err := indicesFromProto(r.GetKept(), n)
		for _, p := range kept {
			if err == nil && !in[p] {
				err = fmt.Errorf("fused filter step %d kept endpoint %d, which the step before it dropped", k, p)
			}
		}
		if err != nil {
			broken = fmt.Errorf("fused filter chain broken at step %d: %w", k, err)
			out[k].Err = broken
			continue
		}
		clear(in)
		for _, p := range kept {
			in[p] = true
		}
		out[k].Value = sdk.FilterVerdict{Kept: kept, Reason: r.GetReason()}
	}
	return out
}

// ScorerClient calls a scorer plugin.
type ScorerClient struct {
	*PluginClient
	score *streamPool[pb.ScoreRequest, pb.ScoreResponse]
}

// ScoreBatch asks for scores for every cycle, and for after-scores for those in a round.
func (c *ScorerClient) ScoreBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[Scored], error) {
	resp, err := c.score.call(ctx, &pb.ScoreRequest{Cycles: c.cycles(cycles), Instance: c.instance})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.ScoreResult) (Scored, error) {
		v := Scored{Scores: r.GetScores(), After: r.GetScoresAfter()}
		if len(v.After) == 0 {
			v.After = nil
		}
		return v, checkScored(v, len(cy.Endpoints))
	})
}

// PickerClient calls a picker plugin.
type PickerClient struct {
	*PluginClient
	pick *streamPool[pb.PickRequest, pb.PickResponse]
}

// PickBatch asks for a preference order for every cycle; scores[i] and after[i] belong to
// cycles[i] (see BatchPicker).
func (c *PickerClient) PickBatch(ctx context.Context, cycles []*sdk.Cycle, scores, after [][]float64) ([]Result[[]int], error) {
	if err := checkPickBatch(cycles, scores, after); err != nil {
		return nil, err
	}
	req := &pb.PickRequest{Cycles: c.cycles(cycles), Scores: make([]*pb.Scores, len(scores)), Instance: c.instance}
	for i, s := range scores {
		req.Scores[i] = &pb.Scores{Values: s}
	}
	if slices.ContainsFunc(after, func(a []float64) bool { return a != nil }) {
		req.ScoresAfter = make([]*pb.Scores, len(after))
		for i, a := range after {
			req.ScoresAfter[i] = &pb.Scores{Values: a}
		}
	}
	resp, err := c.pick.call(ctx, req)
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.PickResult) ([]int, error) {
		return indicesFromProto(r.GetOrder(), len(cy.Endpoints))
	})
}

// DetectorClient calls a saturation detector plugin.
type DetectorClient struct {
	*PluginClient
	detect *streamPool[pb.DetectRequest, pb.DetectResponse]
}

// DetectBatch asks for a verdict for every cycle.
func (c *DetectorClient) DetectBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.SaturationVerdict], error) {
	resp, err := c.detect.call(ctx, &pb.DetectRequest{Cycles: c.cycles(cycles), Instance: c.instance})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(cy *sdk.Cycle, r *pb.DetectResult) (sdk.SaturationVerdict, error) {
		v := sdk.SaturationVerdict{Room: countsFromProto(r.GetRoom()), WaitMs: r.GetWaitMs(), Reason: r.GetReason(),
			Slots: countsFromProto(r.GetSlots())}
		return v, checkRoom(v, len(cy.Endpoints))
	})
}

// OrderClient calls an ordering policy plugin.
type OrderClient struct {
	*PluginClient
	order *streamPool[pb.OrderRequest, pb.OrderResponse]
}

// OrderBatch asks for a queue key for every cycle.
func (c *OrderClient) OrderBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.OrderKey], error) {
	resp, err := c.order.call(ctx, &pb.OrderRequest{Cycles: c.cycles(cycles), Instance: c.instance})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(_ *sdk.Cycle, r *pb.OrderResult) (sdk.OrderKey, error) {
		k := sdk.OrderKey{Rank: r.GetRank(), Flow: r.GetFlow()}
		if r.GetHopelessAfter() != nil {
			k.HopelessAfter = r.GetHopelessAfter().AsTime()
		}
		return k, nil
	})
}

// countsFromProto converts a verdict's counts, capped at the largest int32; none is nil.
func countsFromProto(counts []uint32) []int {
	if len(counts) == 0 {
		return nil
	}
	out := make([]int, len(counts))
	for i, n := range counts {
		out[i] = int(min(n, math.MaxInt32))
	}
	return out
}
