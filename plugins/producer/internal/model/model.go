// Package model holds the producer's models in service: LightGBM text models parsed and served by
// github.com/dmitryikh/leaves, validated before use, and persisted in a directory so that a
// restarted producer predicts from its first cycle.
package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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
}

// Parse validates text as a LightGBM text model (version v2 or v3, one output, regression
// leaves) over exactly features inputs and parses it with leaves. Whatever the bytes — garbage,
// a LightGBM v4 file, an XGBoost binary — it returns an error, never panics.
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
	if err := checkHeader(text); err != nil {
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
	return &Model{ens: ens, text: text, features: features}, nil
}

// checkHeader rejects what leaves cannot read before it tries: the first line must be "tree" and
// the header must say version=v2 or v3 (LightGBM 4 writes v4, which leaves misreads).
func checkHeader(text []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBytes)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "tree" {
		return errors.New(`not a LightGBM text model (its first line is not "tree")`)
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "version="); ok {
			if v != "v2" && v != "v3" {
				return fmt.Errorf("LightGBM model version %q: only v2 and v3 are supported (LightGBM 4 writes v4; save with an older format or retrain)", v)
			}
			return nil
		}
	}
	return errors.New("the LightGBM header has no version line")
}

// Predict returns the model's output for one row of len(features) values.
func (m *Model) Predict(row []float64) float64 { return m.ens.PredictSingle(row, 0) }

// PredictRows writes the model's output for each of the n rows of vals (row-major, each of
// len(features) values) into out, in this goroutine: one call for a whole cycle costs less than a
// call per endpoint.
func (m *Model) PredictRows(vals []float64, n int, out []float64) error {
	return m.ens.PredictDense(vals, n, m.features, out, 0, 1)
}

// Trees returns the number of trees.
func (m *Model) Trees() int { return m.ens.NEstimators() }

// Text returns the model's LightGBM text, as parsed.
func (m *Model) Text() []byte { return m.text }
