// Package buildbin builds the repository's binaries for the tests that run them, as make go-build
// builds them: bin/foresight stamped with the repository's VERSION, and the Go plugins in one go
// build, which compiles and links them in parallel, each embedding the VERSION beside its main.go.
// All with -trimpath, as make does: the build cache then keys packages by content rather than by
// directory, so a clone elsewhere (test/walkthrough's make run) reuses these builds.
package buildbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// Go runs go build -trimpath with args in the repository at repo; its error carries the
// compiler's output.
func Go(repo string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
