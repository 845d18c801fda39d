// Package builtin holds the stages the host runs in process: simple baselines an operator can name
// in the pipeline YAML, and the fallbacks the pipeline applies while a plugin process is down. They
// implement the same sdk interfaces as plugin processes, so the pipeline treats both alike.
package builtin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/flowpolicy"
	"github.com/foresight-router/foresight/plugins/sdk/pickpolicy"
)

// factory makes a fresh, default-configured instance of one built-in type.
type factory struct {
	stage sdk.Stage
	new   func() sdk.Plugin
}

// factories maps every built-in type to its stage and constructor. It is a map literal with
// constant keys, so registering a type twice is a compile error.
var factories = map[string]factory{
	RoundRobinPickerType: {sdk.StagePicker, func() sdk.Plugin { return NewRoundRobinPicker() }},
	MaxScorePickerType:   {sdk.StagePicker, func() sdk.Plugin { return NewMaxScorePicker() }},
	QueueScorerType:      {sdk.StageScorer, func() sdk.Plugin { return NewQueueScorer() }},
	KVCacheScorerType:    {sdk.StageScorer, func() sdk.Plugin { return NewKVCacheScorer() }},
	PrefixScorerType:     {sdk.StageScorer, func() sdk.Plugin { return NewPrefixScorer() }},
	CompositeScorerType:  {sdk.StageScorer, func() sdk.Plugin { return NewCompositeScorer() }},
	AlwaysAdmitType:      {sdk.StageAdmitter, func() sdk.Plugin { return NewAlwaysAdmit() }},
	// The weighted-random-picker: the same logic as its plugin binary (plugins/sdk/pickpolicy),
	// in process to spare the decision a round trip to another process.
	pickpolicy.Type: {sdk.StagePicker, func() sdk.Plugin { return pickpolicy.New() }},
	// Flow control's stages: the same logic as their plugin binaries (plugins/sdk/flowpolicy),
	// in process as the fast path the router takes when the pipeline names none.
	flowpolicy.StateDetectorType:     {sdk.StageDetector, func() sdk.Plugin { return flowpolicy.NewStateDetector() }},
	flowpolicy.PredictedDetectorType: {sdk.StageDetector, func() sdk.Plugin { return flowpolicy.NewPredictedDetector() }},
	flowpolicy.OrderType:             {sdk.StageOrder, func() sdk.Plugin { return flowpolicy.NewOrder() }},
}

// New returns a fresh instance of the built-in type typ, configured with its defaults, and the
// stage it serves. The instance implements the stage's interface (sdk.Picker for StagePicker, and
// so on). An unknown type is an error listing the known ones.
func New(typ string) (sdk.Plugin, sdk.Stage, error) {
	f, ok := factories[typ]
	if !ok {
		return nil, sdk.StageUnspecified, fmt.Errorf("unknown built-in plugin type %q (known: %s)", typ, strings.Join(Types(), ", "))
	}
	return f.new(), f.stage, nil
}

// Types returns the built-in types, sorted.
func Types() []string {
	return slices.Sorted(maps.Keys(factories))
}

// noParams is the parameter set of a built-in without parameters: any field is unknown.
type noParams struct{}

// configureNone accepts only empty parameters ("", "null" or "{}").
func configureNone(params []byte) error {
	_, err := sdk.DecodeParams(params, noParams{})
	return err
}

// checkCycle returns an error when c is nil; verb names the stage call ("scoring").
func checkCycle(verb string, c *sdk.Cycle) error {
	if c == nil {
		return errors.New(verb + ": nil cycle")
	}
	return nil
}
