package predictor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/foresight-router/foresight/plugins/producer/internal/gbdt"
	"github.com/foresight-router/foresight/plugins/producer/internal/prior"
	"github.com/foresight-router/foresight/plugins/producer/internal/share"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// The values of the objective parameter.
const (
	// ObjectiveMean predicts the expected latency (squared error), llm-d's production setting.
	ObjectiveMean = "mean"
	// ObjectiveQuantile predicts the Quantile-th percentile (pinball loss), llm-d's option.
	ObjectiveQuantile = "quantile"
)

// The values of the meanLoss parameter.
const (
	// LossGamma fits the mean through a log link with the gamma deviance: relative errors count.
	LossGamma = "gamma"
	// LossSquared fits the mean with squared error: absolute errors count (llm-d's choice).
	LossSquared = "squared"
)

// The values of the prior parameter.
const (
	// PriorResidual predicts with the analytical prior alone until the first trees, and with the
	// prior times trees that learn the ratio of the actual latency to it afterwards.
	PriorResidual = "residual"
	// PriorOff predicts with trees alone, learned on the latencies themselves (the producer of
	// version 2), and nothing before the first trees.
	PriorOff = "off"
)

// ShareNATSHost is the value of shareNATS that shares through the router's state plane: the
// NATS servers in $FORESIGHT_NATS_URL, and nowhere when the router runs none.
const ShareNATSHost = "host"

// The values of the after parameter: what the after-predictions (one more request placed on the
// endpoint) are made of.
const (
	// AfterTrees predicts the placed state as any other: the prior there times the trees there.
	AfterTrees = "trees"
	// AfterPrior moves only the prior: the prior on the placed state times the trees' factor on
	// the endpoint as it is. With residual trees the placement then moves a prediction by the
	// prior's smooth slope, never by the step of a tree whose split one more request crosses,
	// and the trees predict each endpoint once. The TPOT's rise is bounded by what the request's
	// prefill can do to a running request (boundPrefillRise). Without the prior it is AfterTrees.
	AfterPrior = "prior"
)

// Params are the producer's parameters, decoded from JSON over DefaultParams.
type Params struct {
	// Prior is PriorResidual or PriorOff; PriorFit configures the prior's online fit.
	Prior    string       `json:"prior"`
	PriorFit prior.Params `json:"priorFit"`
	// Objective is ObjectiveMean or ObjectiveQuantile; Quantile is the level of the latter.
	Objective string  `json:"objective"`
	Quantile  float64 `json:"quantile"`
	// MeanLoss is the mean objective's loss, LossGamma or LossSquared.
	MeanLoss string `json:"meanLoss"`
	// Monotone holds the trees to the direction each feature can move a latency in
	// (features.TTFTMonotone, TPOTMonotone): more load never predicts a faster server.
	Monotone bool `json:"monotone"`
	// After is AfterTrees or AfterPrior: how the after-predictions are made.
	After string `json:"after"`
	// RetrainIntervalMs is the least time between two trainings, in cycle time (Now).
	RetrainIntervalMs float64 `json:"retrainIntervalMs"`
	// MinNewSamples is how many new training samples a training needs.
	MinNewSamples int `json:"minNewSamples"`
	// While the model in service was trained on fewer than YoungRows rows (or there is none), a
	// training needs only YoungMinNewSamples new samples and YoungRetrainIntervalMs since the
	// last: a young model learns from every few dozen samples instead of every hundred.
	YoungRows              int     `json:"youngRows"`
	YoungMinNewSamples     int     `json:"youngMinNewSamples"`
	YoungRetrainIntervalMs float64 `json:"youngRetrainIntervalMs"`
	// SamplesPerBucket caps each stratum of the training store (FIFO).
	SamplesPerBucket int `json:"samplesPerBucket"`
	// HoldoutEvery sends one sample in this many to the held-out set (0: none); HoldoutSamples
	// caps that set (FIFO).
	HoldoutEvery   int `json:"holdoutEvery"`
	HoldoutSamples int `json:"holdoutSamples"`
	// QualityWindow is how many recent predictions the rolling MAPE/MAE cover.
	QualityWindow int `json:"qualityWindow"`
	// The drift guard marks predictions invalid when either target's rolling MAPE (over at least
	// DriftMinSamples predictions) exceeds max(DriftMAPE, DriftFactor × the serving model's own
	// held-out MAPE), until a retrained model's held-out MAPE is back under that threshold.
	// Relative to the model's own error, so that a workload whose latencies are inherently hard
	// to predict is not mistaken for drift. DriftMAPE 0 disables the guard.
	DriftMAPE       float64 `json:"driftMAPE"`
	DriftFactor     float64 `json:"driftFactor"`
	DriftMinSamples int     `json:"driftMinSamples"`
	// ColdStart, when set, is a pair of Llumnix profiles (the profile-producer's parameters:
	// ttftProfile, tpotProfile, percentile, maxNumBatchedTokens, chunked, kvCacheTokens) the
	// producer predicts a target from while nothing it learned serves that target: before the
	// prior has learned it, and while the drift guard holds back trees the prior cannot stand in
	// for. Absent: such predictions are invalid (TTFT) or unknown (TPOT), as before.
	ColdStart json.RawMessage `json:"coldStart,omitempty"`
	// ModelDir persists the models in service and loads them at start; "" keeps them in memory.
	// A relative path is relative to the config file's directory (sdk.ResolvePath).
	ModelDir string `json:"modelDir"`
	// TrainInline trains inside the Observe call that triggers it instead of in the background,
	// so that which model serves a cycle depends only on the samples and cycle times: what the
	// simulator needs for reproducible runs. Produce never waits for training either way.
	TrainInline bool `json:"trainInline"`
	// Model configures the gradient-boosted trees of both targets.
	Model ModelParams `json:"model"`
	// ShareDir, when set, makes the producer one of several router replicas that learn from each
	// other's samples through this directory on a shared volume (internal/share; README.md,
	// "Replicas"); "" leaves sharing to ShareNATS. Relative to the config file's directory, as
	// ModelDir. It must exist: a missing one is an unmounted volume.
	ShareDir string `json:"shareDir"`
	// ShareNATS, when ShareDir is not set, makes the producer share its samples and models
	// through NATS JetStream instead (internal/share's NATSExchanger): NATS server URLs
	// (nats://host:port, comma-separated), or ShareNATSHost, the router's own state plane, whose
	// URLs the router gives its plugins in $FORESIGHT_NATS_URL (and the subject prefix in
	// $FORESIGHT_NATS_PREFIX, "foresight" by default). "host" without the variable, and "", share
	// nothing. Setting both ShareDir and ShareNATS is an error.
	ShareNATS string `json:"shareNATS"`
	// ShareNATSPrefix is the subject prefix of the NATS exchange: "" takes the router's
	// ($FORESIGHT_NATS_PREFIX), then "foresight". Producers that share samples share it.
	ShareNATSPrefix string `json:"shareNATSPrefix"`
	// ReplicaID names this replica's files in ShareDir (or its subject and model object in
	// NATS) and must be unique among the producers sharing them; "" takes
	// $FORESIGHT_REPLICA_ID (the router's), then $POD_NAME, then $HOSTNAME.
	ReplicaID string `json:"replicaID"`
	// SharePeriodMs is the cycle time between two exchanges: publishing the samples observed
	// since the last one and merging the other replicas' new ones. Through NATS, the stream
	// keeps ShareKeep × SharePeriodMs of samples (at least a minute).
	SharePeriodMs float64 `json:"sharePeriodMs"`
	// ShareKeep is how many of its newest sample files a replica keeps in ShareDir (through NATS,
	// how many periods of samples the stream keeps): how far a reader may fall behind, and how
	// much history a replica that starts finds there.
	ShareKeep int `json:"shareKeep"`
	// SharePeerTimeoutMs is how long, by this replica's clock, another replica may publish
	// nothing before it is taken as gone and its files (through NATS, its samples and model) are
	// removed.
	SharePeerTimeoutMs float64 `json:"sharePeerTimeoutMs"`
	// SpeedLabel names the endpoint label that tells its kind of hardware (e.g. accelerator:
	// h100): an endpoint's speed factor is pulled toward its kind's, and an endpoint not seen yet
	// starts from its kind's instead of the fleet's. "" turns kinds off.
	SpeedLabel string `json:"speedLabel"`
	// ShareMaxRows bounds the samples waiting to be published (the newest are kept while the
	// directory or the NATS servers are unavailable) and so the rows of one file.
	ShareMaxRows int `json:"shareMaxRows"`
}

// ModelParams are the tree ensemble's hyperparameters (see the gbdt package).
type ModelParams struct {
	Trees          int     `json:"trees"`
	MaxDepth       int     `json:"maxDepth"`
	NumLeaves      int     `json:"numLeaves"`
	LearningRate   float64 `json:"learningRate"`
	Lambda         float64 `json:"lambda"`
	MinChildWeight float64 `json:"minChildWeight"`
	MinSamplesLeaf int     `json:"minSamplesLeaf"`
	Subsample      float64 `json:"subsample"`
	MaxBins        int     `json:"maxBins"`
	Seed           uint64  `json:"seed"`
}

// DefaultParams returns the defaults: the residual prior (prior.DefaultParams), llm-d's store
// (strata capped at 500, ~10 % held out), retraining every 10 s when 100 new samples arrived
// (every 1 s and 25 samples while the model has trained on fewer than 1,000 rows), the mean
// objective with the gamma loss (p90 for quantile), and trees sized for the hot path: 16 trees of
// depth 6 (48 leaves), the trainer's other defaults (gbdt.DefaultParams). README.md has the
// measurements. Sharing goes through the router's state plane when it runs one (shareNATS
// "host"), and is off otherwise (no shareDir); when on, replicas exchange every 5 s (half the
// retrain interval, so a training sees the others' samples of the last 5–10 s), keep 60 files (5
// minutes of history for a replica that starts), take a replica that stood still for 10 minutes
// as gone, and hold at most 50,000 unpublished samples (about 17 MB).
func DefaultParams() Params {
	g := gbdt.DefaultParams()
	g.Trees, g.MaxDepth, g.NumLeaves = 16, 6, 48
	return Params{
		Prior:                  PriorResidual,
		After:                  AfterTrees,
		PriorFit:               prior.DefaultParams(),
		YoungRows:              1000,
		YoungMinNewSamples:     25,
		YoungRetrainIntervalMs: 1000,
		Objective:              ObjectiveMean,
		Quantile:               0.9,
		MeanLoss:               LossGamma,
		RetrainIntervalMs:      10_000,
		MinNewSamples:          100,
		SamplesPerBucket:       1000,
		HoldoutEvery:           10,
		HoldoutSamples:         2000,
		QualityWindow:          500,
		DriftMAPE:              0.25,
		DriftFactor:            2,
		DriftMinSamples:        100,
		ShareNATS:              ShareNATSHost,
		SharePeriodMs:          5000,
		ShareKeep:              60,
		SharePeerTimeoutMs:     600_000,
		ShareMaxRows:           50_000,
		SpeedLabel:             "accelerator",
		Model: ModelParams{Trees: g.Trees, MaxDepth: g.MaxDepth, NumLeaves: g.NumLeaves, LearningRate: g.LearningRate,
			Lambda: g.Lambda, MinChildWeight: g.MinChildWeight, MinSamplesLeaf: g.MinSamplesLeaf,
			Subsample: g.Subsample, MaxBins: g.MaxBins, Seed: g.Seed},
	}
}

// Validate checks every parameter against its accepted range.
func (p *Params) Validate() error {
	errs := []error{
		sdk.CheckOneOf("prior", p.Prior, PriorResidual, PriorOff),
		sdk.CheckOneOf("after", p.After, AfterTrees, AfterPrior),
		sdk.CheckRange("youngRows", float64(p.YoungRows), 0, 1e9),
		sdk.CheckRange("youngMinNewSamples", float64(p.YoungMinNewSamples), 1, 1e7),
		sdk.CheckRange("youngRetrainIntervalMs", p.YoungRetrainIntervalMs, 0, 24*3600e3),
		sdk.CheckOneOf("objective", p.Objective, ObjectiveMean, ObjectiveQuantile),
		sdk.CheckRange("quantile", p.Quantile, 0.01, 0.99),
		sdk.CheckOneOf("meanLoss", p.MeanLoss, LossGamma, LossSquared),
		sdk.CheckRange("retrainIntervalMs", p.RetrainIntervalMs, 0, 24*3600e3),
		sdk.CheckRange("minNewSamples", float64(p.MinNewSamples), 1, 1e7),
		sdk.CheckRange("samplesPerBucket", float64(p.SamplesPerBucket), 1, 1e6),
		sdk.CheckRange("holdoutEvery", float64(p.HoldoutEvery), 0, 1e6),
		sdk.CheckRange("holdoutSamples", float64(p.HoldoutSamples), 0, 1e7),
		sdk.CheckRange("qualityWindow", float64(p.QualityWindow), 1, 1e7),
		sdk.CheckRange("driftMAPE", p.DriftMAPE, 0, 1e3),
		sdk.CheckRange("driftFactor", p.DriftFactor, 1, 1e3),
		sdk.CheckRange("driftMinSamples", float64(p.DriftMinSamples), 1, 1e7),
		sdk.CheckRange("sharePeriodMs", p.SharePeriodMs, 1, 24*3600e3),
		sdk.CheckRange("shareKeep", float64(p.ShareKeep), 1, 1e4),
		sdk.CheckRange("shareMaxRows", float64(p.ShareMaxRows), 1, share.MaxRows),
		sdk.CheckRange("speedLabel length", float64(len(p.SpeedLabel)), 0, 317),
	}
	if p.SharePeerTimeoutMs < 3*p.SharePeriodMs || p.SharePeerTimeoutMs > 7*24*3600e3 || math.IsNaN(p.SharePeerTimeoutMs) {
		errs = append(errs, fmt.Errorf("parameter \"sharePeerTimeoutMs\" must be in [3 × sharePeriodMs, 7 days] = [%g, %g], got %g (a live replica publishes every sharePeriodMs)",
			3*p.SharePeriodMs, 7*24*3600e3, p.SharePeerTimeoutMs))
	}
	if p.ShareNATS != "" && p.ShareNATS != ShareNATSHost {
		if err := share.CheckNATSURL(p.ShareNATS); err != nil {
			errs = append(errs, fmt.Errorf("parameter \"shareNATS\" must be \"\", %q or NATS server URLs: %w", ShareNATSHost, err))
		} else if p.ShareDir != "" {
			errs = append(errs, errors.New(`parameters "shareDir" and "shareNATS" are both set: share through a directory or through NATS, not both`))
		}
	}
	if p.ReplicaID != "" {
		if err := share.CheckID(p.ReplicaID); err != nil {
			errs = append(errs, fmt.Errorf("parameter \"replicaID\": %w", err))
		}
	}
	if err := p.PriorFit.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("parameter \"priorFit\": %w", err))
	}
	if err := p.gbdt(ObjectiveMean).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("parameter \"model\": %w", err))
	}
	return errors.Join(errs...)
}

// gbdt returns the trainer's parameters for the objective.
func (p *Params) gbdt(objective string) gbdt.Params {
	m := p.Model
	g := gbdt.Params{Trees: m.Trees, MaxDepth: m.MaxDepth, NumLeaves: m.NumLeaves, LearningRate: m.LearningRate,
		Lambda: m.Lambda, MinChildWeight: m.MinChildWeight, MinSamplesLeaf: m.MinSamplesLeaf,
		Subsample: m.Subsample, MaxBins: m.MaxBins, Seed: m.Seed, Loss: gbdt.SquaredError}
	switch {
	case objective == ObjectiveQuantile:
		g.Loss, g.Alpha = gbdt.Quantile, p.Quantile
	case p.MeanLoss == LossGamma:
		g.Loss = gbdt.Gamma
	}
	return g
}
