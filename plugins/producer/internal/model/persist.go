package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File names inside a model directory.
const (
	TTFTFile = "ttft.txt"
	TPOTFile = "tpot.txt"
	MetaFile = "meta.json"
	current  = "current" // symlink to the version in service
)

// Set is the producer's TTFT and TPOT models with what is known about them.
type Set struct {
	TTFT, TPOT *Model
	Meta       Meta
}

// Meta describes a model set. An operator's set without meta.json gets Source "operator".
type Meta struct {
	Version      uint64    `json:"version"`
	Source       string    `json:"source"` // "trained" or "operator"
	TrainedAt    time.Time `json:"trained_at,omitzero"`
	TrainingRows uint64    `json:"training_rows"`
	// HoldoutTTFTMAPE and HoldoutTPOTMAPE are the models' errors on held-out samples when they
	// were trained (0: unknown).
	HoldoutTTFTMAPE float64  `json:"holdout_ttft_mape,omitempty"`
	HoldoutTPOTMAPE float64  `json:"holdout_tpot_mape,omitempty"`
	Objective       string   `json:"objective,omitempty"`
	Quantile        float64  `json:"quantile,omitempty"`
	TTFTFeatures    []string `json:"ttft_features,omitempty"`
	TPOTFeatures    []string `json:"tpot_features,omitempty"`
	// Residual marks trees that learned the ratio of the latency to the producer's analytical
	// prior: they predict prior × trees, with Prior, the prior's state when they were trained.
	Residual   bool            `json:"residual,omitempty"`
	Prior      json.RawMessage `json:"prior,omitempty"`
	TTFTSHA256 string          `json:"ttft_sha256,omitempty"`
	TPOTSHA256 string          `json:"tpot_sha256,omitempty"`
}

// Save writes s to dir so that a reader sees the previous set or this one, never a mix: the
// files go to a new version directory, which a symlink swap (rename, atomic on POSIX) then puts
// in service. Older versions beyond the previous one are removed.
func Save(dir string, s *Set) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model directory: %w", err)
	}
	m := s.Meta
	m.TTFTSHA256, m.TPOTSHA256 = digest(s.TTFT.Text()), digest(s.TPOT.Text())
	meta, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	name := fmt.Sprintf("v%06d-%d", m.Version, time.Now().UnixNano())
	vdir := filepath.Join(dir, name)
	if err := os.Mkdir(vdir, 0o755); err != nil {
		return fmt.Errorf("model directory: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{TTFTFile, s.TTFT.Text()}, {TPOTFile, s.TPOT.Text()}, {MetaFile, meta}} {
		if err := writeSynced(filepath.Join(vdir, f.name), f.data); err != nil {
			_ = os.RemoveAll(vdir)
			return err
		}
	}
	link := filepath.Join(dir, current+".tmp")
	_ = os.Remove(link)
	if err := os.Symlink(name, link); err != nil {
		return fmt.Errorf("model directory: %w", err)
	}
	if err := os.Rename(link, filepath.Join(dir, current)); err != nil {
		return fmt.Errorf("model directory: %w", err)
	}
	prune(dir, name)
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// prune removes version directories other than keep and the newest one before it.
func prune(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "v") && e.Name() != keep {
			versions = append(versions, e.Name())
		}
	}
	slices.Sort(versions)
	for i := 0; i < len(versions)-1; i++ {
		_ = os.RemoveAll(filepath.Join(dir, versions[i]))
	}
}

// Load reads the set in service in dir: the version "current" points to, else ttft.txt and
// tpot.txt placed directly in dir by an operator (LightGBM v2/v3 text models over the producer's
// features, with meta.json optional). It returns nil and no error when dir holds no model, and an
// error naming the file and the problem for anything it cannot use.
func Load(dir string, ttftFeatures, tpotFeatures []string) (*Set, error) {
	src := filepath.Join(dir, current)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		src = dir
	}
	ttft, err := readFile(filepath.Join(src, TTFTFile))
	tpot, err2 := readFile(filepath.Join(src, TPOTFile))
	switch {
	case ttft == nil && tpot == nil && err == nil && err2 == nil:
		return nil, nil
	case err != nil || err2 != nil:
		return nil, errors.Join(err, err2)
	case ttft == nil || tpot == nil:
		return nil, fmt.Errorf("%s: a model set needs both %s and %s", src, TTFTFile, TPOTFile)
	}
	s := &Set{Meta: Meta{Source: "operator"}}
	if raw, err := readFile(filepath.Join(src, MetaFile)); err != nil {
		return nil, err
	} else if raw != nil {
		if err := json.Unmarshal(raw, &s.Meta); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(src, MetaFile), err)
		}
		if err := s.Meta.check(ttft, tpot, ttftFeatures, tpotFeatures); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(src, MetaFile), err)
		}
	}
	if s.TTFT, err = Parse(ttft, len(ttftFeatures)); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(src, TTFTFile), err)
	}
	if s.TPOT, err = Parse(tpot, len(tpotFeatures)); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(src, TPOTFile), err)
	}
	return s, nil
}

// ErrOutdated marks a set this producer trained itself over other features than it now gives:
// a set from another version, to be retrained rather than refused.
var ErrOutdated = errors.New("the models were trained by a producer with other features")

// check verifies that meta describes these files over these features.
func (m *Meta) check(ttft, tpot []byte, ttftFeatures, tpotFeatures []string) error {
	var err error
	if m.TTFTFeatures != nil && !slices.Equal(m.TTFTFeatures, ttftFeatures) {
		err = fmt.Errorf("the TTFT model was trained on features %v; this producer gives %v", m.TTFTFeatures, ttftFeatures)
	} else if m.TPOTFeatures != nil && !slices.Equal(m.TPOTFeatures, tpotFeatures) {
		err = fmt.Errorf("the TPOT model was trained on features %v; this producer gives %v", m.TPOTFeatures, tpotFeatures)
	}
	if err != nil && m.Source == "trained" {
		return fmt.Errorf("%w: %w", ErrOutdated, err)
	}
	if err != nil {
		return err
	}
	if m.TTFTSHA256 != "" && m.TTFTSHA256 != digest(ttft) || m.TPOTSHA256 != "" && m.TPOTSHA256 != digest(tpot) {
		return errors.New("the model files do not match their recorded checksums")
	}
	return nil
}

// readFile returns the file's bytes, nil without error if it does not exist.
func readFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxBytes {
		return nil, fmt.Errorf("%s: %d bytes is larger than a model may be (%d)", path, st.Size(), MaxBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
