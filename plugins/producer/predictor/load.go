package predictor

import (
	"fmt"

	"github.com/foresight-router/foresight/plugins/producer/internal/features"
	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// loadModels finds the model set to serve in params' model directory: the newest intact version
// (model.LoadNewest), none for a cold start. Only an operator's model files it cannot use are an
// error: a corrupt or outdated version this producer saved is passed over, never a failure to
// start.
func loadModels(params Params) (model.Loaded, error) {
	if params.ModelDir == "" {
		return model.Loaded{Reason: `parameter "modelDir" is not set: models are trained and kept in memory only`}, nil
	}
	found, err := model.LoadNewest(params.ModelDir, features.TTFT, features.TPOT)
	if err != nil {
		return found, fmt.Errorf("parameter \"modelDir\": %w", err)
	}
	if found.Set != nil && found.Set.Meta.Residual && params.Prior == PriorOff {
		found.Set, found.Reason = nil, fmt.Sprintf(`the models in %s correct the prior, which prior "off" disables`, found.Path)
	}
	return found, nil
}

// logLoaded says which model the producer serves from its start, or why none (a cold start), with
// a warning for each saved version it passed over.
func logLoaded(found model.Loaded) {
	for _, err := range found.Skipped {
		sdk.Log().Warn().Err(err).Msg("model version unusable: falling back to an older one, else a cold start")
	}
	if found.Set == nil {
		ev := sdk.Log().Info()
		if len(found.Skipped) > 0 {
			ev = sdk.Log().Warn()
		}
		ev.Str("reason", found.Reason).Msg("no model: cold start")
		return
	}
	m := found.Set.Meta
	ev := sdk.Log().Info()
	if len(found.Skipped) > 0 {
		ev = sdk.Log().Warn()
	}
	ev.Str("path", found.Path).Uint64("model_version", m.Version).Str("source", m.Source).
		Time("trained_at", m.TrainedAt).Uint64("training_rows", m.TrainingRows).Msg("model loaded")
}
