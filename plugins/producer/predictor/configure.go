package predictor

import (
	"encoding/json"
	"fmt"

	"github.com/foresight-router/foresight/plugins/internal/profiled"
	"github.com/foresight-router/foresight/plugins/internal/quality"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/producer/internal/store"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// Configure decodes params over DefaultParams and applies them. With a model directory it loads
// the newest intact model set saved there, if any, and serves it at once (a saved version it
// cannot use is passed over with a warning, load.go); an operator's model files it cannot use
// are an error and leave the previous configuration in force.
func (p *Producer) Configure(raw []byte) error {
	params, err := sdk.DecodeParams(raw, DefaultParams())
	if err != nil {
		return err
	}
	params.ModelDir = sdk.ResolvePath(params.ModelDir)
	if err := checkShareExplicit(raw, params); err != nil {
		return err
	}
	target, err := resolveShare(&params)
	if err != nil {
		return err
	}
	cold, err := loadColdStart(params.ColdStart)
	if err != nil {
		return err
	}
	found, err := loadModels(params)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.apply(params)
	p.publish(func(s *serving) { s.cold = cold })
	if found.Set != nil {
		if err := p.serveLoaded(found.Set); err != nil {
			return fmt.Errorf("parameter \"modelDir\": %w", err)
		}
	}
	logLoaded(found)
	p.configureShare(params, target)
	return nil
}

// loadColdStart reads the coldStart parameter's profiles; nil without the parameter.
func loadColdStart(raw json.RawMessage) (*profiled.Model, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	prm, err := sdk.DecodeParams(raw, profiled.Defaults())
	if err == nil {
		var m *profiled.Model
		if m, err = profiled.Load(prm); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("parameter \"coldStart\": %w", err)
}

// serveLoaded puts a model set read from disk in service, with the prior it was trained
// against for residual trees; the caller holds mu.
func (p *Producer) serveLoaded(set *model.Set) error {
	if set.Meta.Residual {
		if err := p.prior.Restore(set.Meta.Prior); err != nil {
			return err
		}
		p.publish(func(s *serving) { s.prior = p.prior.Snapshot() })
	}
	p.resetQuality(prior.TTFT, prior.TPOT)
	p.putInService(set)
	return nil
}

// apply installs params; the caller holds mu (or owns p). A change of store or window sizes
// starts them afresh; the models in service stay.
func (p *Producer) apply(params Params) {
	old := p.params
	p.params = params
	if p.store == nil || old.SamplesPerBucket != params.SamplesPerBucket || old.HoldoutEvery != params.HoldoutEvery ||
		old.HoldoutSamples != params.HoldoutSamples {
		p.store = store.New(params.SamplesPerBucket, params.HoldoutEvery, params.HoldoutSamples)
	}
	if p.q[prior.TTFT] == nil || old.QualityWindow != params.QualityWindow {
		for k := range p.q {
			p.q[k], p.priorQ[k] = quality.NewWindow(params.QualityWindow), quality.NewWindow(params.QualityWindow)
		}
	}
	switch {
	case params.Prior == PriorOff:
		p.prior = nil
	case p.prior == nil || old.PriorFit != params.PriorFit:
		p.prior = prior.New(params.PriorFit)
	}
	snap := p.prior.Snapshot()
	p.publish(func(s *serving) { s.prior, s.speedLabel, s.after = snap, params.SpeedLabel, params.After })
}
