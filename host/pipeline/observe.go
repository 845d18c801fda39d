package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
)

// ErrNoProducer is Observe's error for a pipeline without a producer.
var ErrNoProducer = errors.New("the pipeline has no producer to observe")

// ObserveTimeout bounds one Observe call. It is far longer than a stage deadline: Observe is off
// the request path, and a producer that trains inline answers after training.
const ObserveTimeout = 30 * time.Second

// HasProducer reports whether the pipeline has a producer.
func (p *Pipeline) HasProducer() bool { return p.producer != nil }

// Observe sends finished-request samples to the producer (see host/feedback for batching). When
// the producer's slot holds an experiment, every producer in it — each arm and the shadow —
// learns from every sample (the latencies observed are facts whichever producer predicted them),
// and the answer is the first arm's; another producer's failure is logged.
func (p *Pipeline) Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	if p.producer == nil {
		return sdk.ObserveResult{}, ErrNoProducer
	}
	ctx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	if !p.exp.at(sdk.StageProducer, 0) {
		return observe(ctx, p.producer, samples)
	}
	prods := slices.Clone(p.exp.arms)
	if p.exp.shadow != nil {
		prods = append(prods, p.exp.shadow)
	}
	results := make([]sdk.ObserveResult, len(prods))
	errs := make([]error, len(prods))
	var wg sync.WaitGroup
	for i, prod := range prods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = observe(ctx, prod.(*producerSlot), samples)
		}()
	}
	wg.Wait()
	for i, err := range errs[1:] {
		if err != nil {
			prods[i+1].(*producerSlot).log.Warn().Err(err).Msg("observe failed")
		}
	}
	return results[0], errs[0]
}

func observe(ctx context.Context, prod *producerSlot, samples []sdk.Sample) (sdk.ObserveResult, error) {
	c, err := client[transport.BatchProducer](prod.slot)
	if err != nil {
		return sdk.ObserveResult{}, err
	}
	res, err := c.Observe(ctx, samples)
	if isTransport(err) {
		prod.plugin.CallFailed()
	}
	return res, err
}
