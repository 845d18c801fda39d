package threshold

import "github.com/foresight-router/foresight/plugins/sdk"

// Params are the filter's parameters, decoded from JSON over Defaults.
type Params struct {
	// TTFTThreshold and TPOTThreshold multiply the request's TTFT and TPOT objectives into the
	// bounds a prediction must meet, in (0, 10]: below 1 leaves a margin for prediction errors,
	// above 1 tolerates predictions a little over the objective.
	TTFTThreshold float64 `json:"ttftThreshold"`
	TPOTThreshold float64 `json:"tpotThreshold"`
}

// Defaults block exactly the endpoints predicted over the objective: a threshold of 1, the
// objective itself. Llumnix leaves its dispatch thresholds to the operator and advises starting
// slightly below 1; 1 is the neutral choice until a fleet's prediction error is known.
func Defaults() Params { return Params{TTFTThreshold: 1, TPOTThreshold: 1} }

// Validate returns an error naming the first parameter outside its accepted range.
func (p *Params) Validate() error {
	if err := sdk.CheckRangeOpenLow("ttftThreshold", p.TTFTThreshold, 0, 10); err != nil {
		return err
	}
	return sdk.CheckRangeOpenLow("tpotThreshold", p.TPOTThreshold, 0, 10)
}
