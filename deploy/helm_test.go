package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The chart, and the release the tests render it as.
const (
	chartDir  = "helm/foresight"
	release   = "foresight"
	namespace = "foresight"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm returns the helm binary the tests render with: $FORESIGHT_HELM when set (make helm-check
// sets it), else the repository's .tools/bin/helm, built by the Makefile's own rule when missing
// (make test leaves that to this test, so that it overlaps the other packages' tests). Either must
// be the Makefile's HELM_VERSION.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() { helmPath, helmErr = findHelm() })
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

func findHelm() (string, error) {
	want, err := makefileVar("HELM_VERSION")
	if err != nil {
		return "", err
	}
	path := os.Getenv("FORESIGHT_HELM")
	if path == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		// The Makefile names the target by its absolute path under its CURDIR, the real path.
		path = filepath.Join(root, ".tools", "bin", "helm")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			cmd := exec.Command("make", "--no-print-directory", path)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				return "", fmt.Errorf("building helm %s with `make %s` failed (make tools builds it; it needs the Go module proxy): %v\n%s", want, path, err, out)
			}
		}
	}
	out, err := exec.Command(path, "version", "--template", "{{.Version}}").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %v ($FORESIGHT_HELM names the helm binary; unset, the test uses .tools/bin/helm and builds it with make)", path, err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		return "", fmt.Errorf("%s is helm %s but the Makefile pins %s: remove it and run `make tools`", path, got, want)
	}
	return path, nil
}

// render runs helm template on the chart as the release, with args (values files, --set) added.
func render(t *testing.T, args ...string) []byte {
	t.Helper()
	out, stderr, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// helmTemplate runs helm template and returns its output, its stderr and its error.
func helmTemplate(t *testing.T, args ...string) ([]byte, string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), stderr.String(), err
}

// repoRoot returns the repository's real path (the Makefile's CURDIR).
func repoRoot() (string, error) {
	abs, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// makefileVar returns the value of a `NAME := value` line of the repository's Makefile.
func makefileVar(name string) (string, error) {
	data, err := os.ReadFile("../Makefile")
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*:=\s*(\S+)`).FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("../Makefile: no %s := line", name)
	}
	return string(m[1]), nil
}
