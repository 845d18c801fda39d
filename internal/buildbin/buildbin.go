// Package buildbin builds the repository's binaries for the tests that run them, as make go-build
// builds them: bin/foresight stamped with the repository's VERSION, and the Go plugins in one go
// build, which compiles and links them in parallel, each embedding the VERSION beside its main.go.
// All with -trimpath, as make does: the build cache then keys packages by content rather than by
// directory, so a clone elsewhere (test/e2e's walk-through) reuses these builds.
//
// go test runs packages in parallel, and several of them build the same binaries: go build does not
// share work between processes, so two cold builds of one package graph compile it twice. Every
// build here holds one lock file for the user (flock), so the first compiles and the others find
// its work in the build cache and only link.
package buildbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// plugins returns the names of the Go plugins of the repository at repo: the folders
// plugins/<name> that hold a main.go, as the Makefile finds them.
func plugins(repo string) ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(repo, "plugins", "*", "main.go"))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(mains))
	for i, m := range mains {
		names[i] = filepath.Base(filepath.Dir(m))
	}
	return names, nil
}

// Host builds the router (cmd/foresight) of the repository at repo into the file out.
func Host(repo, out string) error {
	v, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		return err
	}
	return Go(repo, "-ldflags", "-X main.version="+strings.TrimSpace(string(v)), "-o", out, "./cmd/foresight")
}

// PluginsInto builds the named Go plugins of the repository at repo (every one when names is
// empty) into dir/<name>.
func PluginsInto(repo, dir string, names ...string) error {
	if len(names) == 0 {
		var err error
		if names, err = plugins(repo); err != nil {
			return err
		}
	}
	args := []string{"-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./plugins/"+n)
	}
	return Go(repo, args...)
}

// Go runs go build -trimpath with args in the repository at repo, one such build at a time for
// the user; its error carries the compiler's output.
func Go(repo string, args ...string) error {
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// lock takes the user's build lock, waiting for the build that holds it, and returns its release.
// The kernel releases it too if the process dies.
func lock() (func(), error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("foresight-buildbin-%d.lock", os.Getuid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("build lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
