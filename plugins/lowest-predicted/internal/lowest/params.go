package lowest

import "github.com/foresight-router/foresight/plugins/sdk"

// The predictions the picker can order by.
const (
	// MetricTTFT orders by predicted time to first token: Llumnix's prefill stage.
	MetricTTFT = "ttft"
	// MetricTPOT orders by predicted time per output token: Llumnix's decode stage.
	MetricTPOT = "tpot"
)

// Params are the picker's parameters, decoded from JSON over Defaults.
type Params struct {
	// Metric is MetricTTFT or MetricTPOT.
	Metric string `json:"metric"`
}

// Defaults orders by TTFT, as Llumnix's prefill-stage selector does (predicted_ttft).
func Defaults() Params { return Params{Metric: MetricTTFT} }

// Validate returns an error naming a parameter outside its accepted values.
func (p *Params) Validate() error { return sdk.CheckOneOf("metric", p.Metric, MetricTTFT, MetricTPOT) }
