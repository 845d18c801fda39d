package bench

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/pipeline"
	"github.com/foresight-router/foresight/sim/cluster"
	"github.com/foresight-router/foresight/sim/workload"
	"github.com/rs/zerolog"
)

// flowSuffix marks a strategy run with flow control (config.DefaultFlowControl): rr+fc,
// predicted-latency+fc. A strategy given as a config file runs with flow control when the file
// enables its flowControl section.
const flowSuffix = "+fc"

// flowAllSuffix is flowSuffix with flowControl.candidates all: the pipeline chooses among every
// endpoint while some has room.
const flowAllSuffix = "+fc-all"

// strategyFlow splits a strategy's name into the strategy to build and its flow control (nil
// without).
func strategyFlow(name string) (base string, fc *cluster.FlowControl, err error) {
	if base, ok := strings.CutSuffix(name, flowAllSuffix); ok {
		f := config.DefaultFlowControl()
		f.Candidates = config.CandidatesAll
		return base, simFlowControl(&f), nil
	}
	if base, ok := strings.CutSuffix(name, flowSuffix); ok {
		f := config.DefaultFlowControl()
		return base, simFlowControl(&f), nil
	}
	if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
		return name, nil, nil
	}
	cfg, err := config.Load(name)
	if err != nil {
		return name, nil, err
	}
	if !cfg.FlowControl.Enabled {
		return name, nil, nil
	}
	return name, simFlowControl(&cfg.FlowControl), nil
}

// simFlowControl is the section as the simulator runs it, with the section's built-in stages
// (withPipelineStages swaps in a config pipeline's own). The simulated requests carry no
// headers: a request's class stands for its tenant (flow keys header and user), its session for
// session and its priority for objective.
func simFlowControl(f *config.FlowControl) *cluster.FlowControl {
	fc := &cluster.FlowControl{Queue: f.Queue(nil), Stages: pipeline.NewFlowBuiltins(*f, zerolog.Nop()),
		AllCandidates: f.Candidates == config.CandidatesAll}
	switch f.FlowKey {
	case config.FlowKeySession:
		fc.Flow = func(r *workload.Request) string { return r.SessionID }
	case config.FlowKeyObjective:
		fc.Flow = func(r *workload.Request) string { return strconv.Itoa(int(r.Priority)) }
	default:
		fc.Flow = func(r *workload.Request) string { return r.Class }
	}
	return fc
}

// withPipelineStages has fc use the flow control stages of router's pipeline, when it routes
// with one: its config's detector and order slots (plugins an operator deploys), else the same
// built-ins its flowControl section configures.
func withPipelineStages(fc *cluster.FlowControl, router cluster.Router) {
	if pr, ok := router.(cluster.PipelineRouter); ok && fc != nil {
		fc.Stages = pr.Pipeline
	}
}
