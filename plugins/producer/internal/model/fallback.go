package model

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Loaded is what LoadNewest found in a model directory.
type Loaded struct {
	// Set is the set to serve; nil for a cold start.
	Set *Set
	// Path is where Set came from: a version directory, or the model directory itself for an
	// operator's set.
	Path string
	// Skipped are the saved versions passed over, newest first, each error naming the version
	// and why it cannot be served (a dangling "current" link is one too).
	Skipped []error
	// Reason says why there is no set, when Set is nil.
	Reason string
}

// LoadNewest reads the newest intact set this producer saved in dir: the version "current" points
// to, else — when that link dangles, or its version is corrupt (a file missing or edited, its
// checksums wrong) or was trained on other features (ErrOutdated) — the newest older version that
// loads, each one passed over in Skipped. No intact version is a cold start, never an error.
// Without a saved version (no "current" and no version directory) it reads an operator's
// ttft.txt and tpot.txt in dir as Load does, and a file there it cannot use is an error.
func LoadNewest(dir string, ttftFeatures, tpotFeatures []string) (Loaded, error) {
	var out Loaded
	link := filepath.Join(dir, current)
	var tried string // the version "current" points to
	if target, err := os.Readlink(link); err == nil {
		tried = filepath.Base(target)
		if _, err := os.Stat(link); err != nil {
			out.Skipped = append(out.Skipped, fmt.Errorf("%s: the link points to %s, which cannot be read: %w", link, target, err))
		} else if set, err := loadVersion(link, ttftFeatures, tpotFeatures); err != nil {
			out.Skipped = append(out.Skipped, fmt.Errorf("%s (-> %s): %w", link, target, err))
		} else {
			out.Set, out.Path = set, filepath.Join(dir, tried)
			return out, nil
		}
	}
	versions, err := versionDirs(dir)
	if err != nil {
		return out, fmt.Errorf("model directory: %w", err)
	}
	for _, v := range versions {
		if v == tried {
			continue
		}
		path := filepath.Join(dir, v)
		set, err := loadVersion(path, ttftFeatures, tpotFeatures)
		if err != nil {
			out.Skipped = append(out.Skipped, fmt.Errorf("%s: %w", path, err))
			continue
		}
		out.Set, out.Path = set, path
		return out, nil
	}
	if tried != "" || len(versions) > 0 {
		out.Reason = fmt.Sprintf("no intact model version in %s", dir)
		return out, nil
	}
	set, err := Load(dir, ttftFeatures, tpotFeatures)
	switch {
	case errors.Is(err, ErrOutdated):
		out.Skipped = append(out.Skipped, fmt.Errorf("%s: %w", dir, err))
		out.Reason = "the models in " + dir + " were trained on other features: they are trained again"
	case err != nil:
		return out, err
	case set == nil:
		out.Reason = "no model in " + dir + " yet"
	default:
		out.Set, out.Path = set, dir
	}
	return out, nil
}

// loadVersion reads the set in one version directory (or what a link to it resolves to), which
// must hold both models.
func loadVersion(path string, ttftFeatures, tpotFeatures []string) (*Set, error) {
	set, err := Load(path, ttftFeatures, tpotFeatures)
	if err == nil && set == nil {
		err = fmt.Errorf("it holds neither %s nor %s", TTFTFile, TPOTFile)
	}
	return set, err
}

// versionDirs are the version directories Save wrote in dir, newest first.
func versionDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "v") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out) // v%06d-<nanoseconds>: the order they were saved in
	slices.Reverse(out)
	return out, nil
}
