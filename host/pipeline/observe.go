package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// ErrNoProducer is Observe's error for a pipeline without a producer.
var ErrNoProducer = errors.New("the pipeline has no producer to observe")

// ObserveTimeout bounds one Observe call. It is far longer than a stage deadline: Observe is off
// the request path, and a producer that trains inline answers after training.
const ObserveTimeout = 30 * time.Second

// HasProducer reports whether the pipeline has a producer.
func (p *Pipeline) HasProducer() bool { return p.producer != nil }

// Observe sends finished-request samples to the producer (see host/observe for batching).
func (p *Pipeline) Observe(ctx context.Context, samples []sdk.Sample) (sdk.ObserveResult, error) {
	if p.producer == nil {
		return sdk.ObserveResult{}, ErrNoProducer
	}
	c, err := client[sdk.BatchProducer](p.producer.slot)
	if err != nil {
		return sdk.ObserveResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, ObserveTimeout)
	defer cancel()
	res, err := c.Observe(ctx, samples)
	if isTransport(err) {
		p.producer.plugin.CallFailed()
	}
	return res, err
}
