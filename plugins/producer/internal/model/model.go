// Package model holds the producer's models in service: LightGBM text models parsed and served by
// github.com/dmitryikh/leaves, validated before use, and persisted in a directory so that a
// restarted producer predicts from its first cycle.
package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dmitryikh/leaves"
)

// MaxBytes bounds a model file; anything larger is not a model this producer would write.
const MaxBytes = 64 << 20

// Model is one parsed tree ensemble. It is immutable and safe for concurrent use.
type Model struct {
	ens      *leaves.Ensemble
	text     []byte
	features int
	exp      bool // a log-link objective: the prediction is exp of the trees' sum
}

// Parse validates text as a LightGBM text model (version v2 or v3, one output, a regression
// objective) over exactly features inputs and parses it with leaves. Whatever the bytes —
// garbage, a LightGBM v4 file, an XGBoost binary, a classifier — it returns an error, never
// panics.
//
// The trees of a log-link objective (poisson, gamma, tweedie) sum to the log of the prediction,
// and the model predicts exp of the sum; the others predict the sum. Parse reads the objective
// itself rather than asking leaves for its transformation, which knows these three only when
// written without parameters and cannot parse "quantile alpha:0.9".
func Parse(text []byte, features int) (m *Model, err error) {
	if len(text) == 0 {
		return nil, errors.New("empty model")
	}
	if len(text) > MaxBytes {
		return nil, fmt.Errorf("model of %d bytes is larger than %d", len(text), MaxBytes)
	}
	if bytes.IndexByte(text, 0) >= 0 {
		return nil, errors.New("binary data, not a LightGBM text model (an XGBoost binary model, perhaps?)")
	}
	objective, err := checkHeader(text)
	if err != nil {
		return nil, err
	}
	exp, err := logLink(objective)
	if err != nil {
		return nil, err
	}
	if err := checkTrees(text); err != nil {
		return nil, fmt.Errorf("malformed LightGBM model: %w", err)
	}
	defer func() { // leaves trusts its input more than a file from an operator deserves
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("malformed LightGBM model: %v", r)
		}
	}()
	ens, err := leaves.LGEnsembleFromReader(bufio.NewReader(bytes.NewReader(text)), false)
	if err != nil {
		return nil, fmt.Errorf("malformed LightGBM model: %w", err)
	}
	if ens.NRawOutputGroups() != 1 {
		return nil, fmt.Errorf("the model has %d outputs; a latency model has 1", ens.NRawOutputGroups())
	}
	if ens.NFeatures() != features {
		return nil, fmt.Errorf("the model reads %d features; this producer gives %d", ens.NFeatures(), features)
	}
	if ens.NEstimators() == 0 {
		return nil, errors.New("the model has no trees")
	}
	return &Model{ens: ens, text: text, features: features, exp: exp}, nil
}

// logLink reports whether a LightGBM objective line (name, then parameters) has a log link, and
// rejects the objectives whose output is not a number to predict (classification, ranking).
func logLink(objective string) (bool, error) {
	name, _, _ := strings.Cut(objective, " ")
	switch name {
	case "poisson", "gamma", "tweedie":
		return true, nil
	case "binary", "multiclass", "multiclassova", "cross_entropy", "cross_entropy_lambda", "lambdarank", "rank_xendcg":
		return false, fmt.Errorf("the model's objective %q is a classification or ranking objective; a latency model is a regression (regression, quantile, gamma, …)", name)
	}
	return false, nil
}

// checkHeader rejects what leaves cannot read before it tries: the first line must be "tree" and
// the header must say version=v2 or v3 (LightGBM 4 writes v4, which leaves misreads). It returns
// the header's objective line ("" when there is none).
func checkHeader(text []byte) (objective string, err error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBytes)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "tree" {
		return "", errors.New(`not a LightGBM text model (its first line is not "tree")`)
	}
	version := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "version="); ok {
			version = v
		} else if v, ok := strings.CutPrefix(line, "objective="); ok {
			objective = v
		}
	}
	switch version {
	case "v2", "v3":
		return objective, nil
	case "":
		return "", errors.New("the LightGBM header has no version line")
	}
	return "", fmt.Errorf("LightGBM model version %q: only v2 and v3 are supported (LightGBM 4 writes v4; save with an older format or retrain)", version)
}

// Predict returns the model's output for one row of len(features) values.
func (m *Model) Predict(row []float64) float64 {
	if m.exp {
		return math.Exp(m.ens.PredictSingle(row, 0))
	}
	return m.ens.PredictSingle(row, 0)
}

// PredictRows writes the model's output for each of the n rows of vals (row-major, each of
// len(features) values) into out, in this goroutine: one call for a whole cycle costs less than a
// call per endpoint.
func (m *Model) PredictRows(vals []float64, n int, out []float64) error {
	if err := m.ens.PredictDense(vals, n, m.features, out, 0, 1); err != nil {
		return err
	}
	if m.exp {
		for i := range out[:n] {
			out[i] = math.Exp(out[i])
		}
	}
	return nil
}

// Trees returns the number of trees.
func (m *Model) Trees() int { return m.ens.NEstimators() }

// Text returns the model's LightGBM text, as parsed.
func (m *Model) Text() []byte { return m.text }
