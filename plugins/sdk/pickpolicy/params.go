package pickpolicy

import "github.com/foresight-router/foresight/plugins/sdk"

// The strategies a picker can use to turn scores into an order.
const (
	// StrategyProportional draws the order with probability proportional to the score (llm-d).
	StrategyProportional = "proportional"
	// StrategySoftmax draws the order with probability proportional to exp(score / temperature).
	StrategySoftmax = "softmax"
	// StrategyArgmax sorts by score, breaking ties at random.
	StrategyArgmax = "argmax"
)

// Params are the picker's parameters, decoded from JSON over Defaults.
type Params struct {
	// Strategy is one of StrategyProportional, StrategySoftmax or StrategyArgmax.
	Strategy string `json:"strategy"`
	// Temperature divides score differences under softmax, in (0, 100]; other strategies ignore it.
	// It is in score units: with scores in [0, 1] and 0.1, a lead of 0.1 is worth a factor of e.
	Temperature float64 `json:"temperature"`
}

// Defaults returns softmax at a temperature of 0.1, which the routing bench chose over llm-d's
// proportional draw (README.md has the runs).
func Defaults() Params {
	return Params{Strategy: StrategySoftmax, Temperature: 0.1}
}

// Validate returns an error naming the first parameter outside its accepted values.
func (p *Params) Validate() error {
	if err := sdk.CheckOneOf("strategy", p.Strategy, StrategyProportional, StrategySoftmax, StrategyArgmax); err != nil {
		return err
	}
	return sdk.CheckRangeOpenLow("temperature", p.Temperature, 0, 100)
}
