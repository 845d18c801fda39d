package kubeapi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ToolsModule is the folder, from the repository's root, of the Go module that pins and builds
// kube-apiserver and etcd; BinDir is where they are built.
const (
	ToolsModule = "tools/kubeapi"
	BinDir      = ".tools/bin"
)

// MakeTarget builds the binaries as Start does; make test depends on it.
const MakeTarget = "make kube-apiserver"

// buildArgs is the go build that makes both binaries, run in ToolsModule: kube-apiserver straight
// from k8s.io/kubernetes (the module's tool directive), etcd from the module's etcd/main.go. The
// Makefile's kube-apiserver target runs the same command with the same environment (buildEnv), so
// that either finds the other's output up to date.
func buildArgs(out string) []string {
	return []string{"build", "-trimpath", "-o", out + string(filepath.Separator), "k8s.io/kubernetes/cmd/kube-apiserver", "./etcd"}
}

// buildEnv fixes what else changes the build: no cgo (as Kubernetes' own release builds), no VCS
// stamp (the binary would change with every commit), no go.work, and no GOFLAGS of the caller
// (a -race there would rebuild the whole of Kubernetes).
var buildEnv = []string{"CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off"}

// binaries are the two executables Start runs.
type binaries struct {
	apiserver, etcd string
}

var (
	binOnce sync.Once
	bins    binaries
	binErr  error
)

// ensureBinaries returns the binaries, once per test process: it runs the go build of
// ToolsModule into BinDir, which does nothing but check when they are up to date (well under a
// second), links them when the build cache has their packages (seconds), and otherwise compiles
// Kubernetes (minutes: make test builds them first, through MakeTarget). Test processes that
// start at once take turns through a lock file, so that none runs a binary another is writing.
func ensureBinaries() (binaries, error) {
	binOnce.Do(func() { bins, binErr = build() })
	return bins, binErr
}

func build() (binaries, error) {
	root, err := repoRoot()
	if err != nil {
		return binaries{}, err
	}
	out := filepath.Join(root, BinDir)
	b := binaries{apiserver: filepath.Join(out, "kube-apiserver"), etcd: filepath.Join(out, "etcd")}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return b, err
	}
	lock, err := os.OpenFile(filepath.Join(out, ".kubeapi.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return b, err
	}
	defer lock.Close() // closing releases the lock
	if err := lockFile(lock); err != nil {
		return b, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	cmd := exec.Command("go", buildArgs(out)...)
	cmd.Dir = filepath.Join(root, ToolsModule)
	cmd.Env = append(os.Environ(), buildEnv...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return b, fmt.Errorf("building kube-apiserver and etcd (cd %s && %s go %s): %v\n%s\nbuild them with %s",
			ToolsModule, strings.Join(buildEnv, " "), strings.Join(buildArgs(filepath.Join("$REPO", BinDir)), " "), err, msg, MakeTarget)
	}
	for _, f := range []string{b.apiserver, b.etcd} {
		if _, err := os.Stat(f); err != nil {
			return b, fmt.Errorf("%v after the build; build them with %s", err, MakeTarget)
		}
	}
	return b, nil
}

// repoRoot returns the repository's root: the nearest folder, from the working directory up
// (go test runs a package's tests in its folder), that holds ToolsModule's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ToolsModule, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s/go.mod in the working directory or above it: kubeapi runs in the repository's tests", ToolsModule)
		}
		dir = parent
	}
}
