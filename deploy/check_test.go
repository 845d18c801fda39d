package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/buildbin"
)

// binDir is a temp dir laid out as the image's bin directory: foresight and plugins/<stage> for the
// Go plugins (the TypeScript one is not in the image), each stamped with its VERSION as make
// build stamps it.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(filepath.Dir(binDir))
	}
	os.Exit(code)
}

// imageBinaries builds the router and the Go plugins once for the package's tests and returns
// their directory.
func imageBinaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() { binDir, binErr = buildImageBinaries() })
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

func buildImageBinaries() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "foresight-deploy-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, "bin")
	// As make go-build builds them (the image's CGO_ENABLED=0 changes how, not what, the binaries
	// check), so that these builds share the build cache with test/e2e's.
	if err := buildbin.Host(root, filepath.Join(dir, "foresight")); err != nil {
		return "", err
	}
	if err := buildbin.PluginsInto(root, filepath.Join(dir, "plugins")); err != nil {
		return "", err
	}
	return dir, nil
}

// foresightCheck runs `foresight check` on a config as the pod would see it: each path of the
// image or pod named in paths (its bin directory, its volume mounts) replaced by the local
// directory it maps to. It returns check's output.
func foresightCheck(t *testing.T, config string, paths map[string]string, env []string) (string, error) {
	t.Helper()
	var pairs []string
	for image, local := range paths {
		pairs = append(pairs, image, local)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(strings.NewReplacer(pairs...).Replace(config)), 0o644); err != nil {
		t.Fatal(err)
	}
	// check starts every plugin and stops them; a minute is far more than it takes.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(imageBinaries(t), "foresight"), "check", "--config", file)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// repoRoot returns the repository's real path.
func repoRoot() (string, error) {
	abs, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}
