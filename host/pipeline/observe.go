package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/foresight-router/foresight/host/pluginhost"
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
	res, _, err := p.ObserveUnseen(ctx, samples, map[*pluginhost.Plugin]bool{})
	return res, err
}

// ObserveUnseen is Observe for pipelines that share producers — the scheduling profiles of one
// router: it sends the samples to the producers of the slot that are not in seen, adds them to
// seen, and answers with the first of them. observed is false when none was left (no producer,
// or every one seen), and the answer is then empty.
func (p *Pipeline) ObserveUnseen(ctx context.Context, samples []sdk.Sample, seen map[*pluginhost.Plugin]bool) (_ sdk.ObserveResult, observed bool, _ error) {
	if p.producer == nil {
		return sdk.ObserveResult{}, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	prods := []*producerSlot{p.producer}
	if p.exp.at(sdk.StageProducer, 0) {
		prods = prods[:0]
		for _, s := range p.exp.arms {
			prods = append(prods, s.(*producerSlot))
		}
		if p.exp.shadow != nil {
			prods = append(prods, p.exp.shadow.(*producerSlot))
		}
	}
	prods = slices.DeleteFunc(prods, func(s *producerSlot) bool { return seen[s.plugin] })
	if len(prods) == 0 {
		return sdk.ObserveResult{}, false, nil
	}
	for _, s := range prods {
		seen[s.plugin] = true
	}
	results := make([]sdk.ObserveResult, len(prods))
	errs := make([]error, len(prods))
	var wg sync.WaitGroup
	for i, prod := range prods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = observe(ctx, prod, samples)
		}()
	}
	wg.Wait()
	for i, err := range errs[1:] {
		if err != nil {
			prods[i+1].log.Warn().Err(err).Msg("observe failed")
		}
	}
	return results[0], true, errs[0]
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
