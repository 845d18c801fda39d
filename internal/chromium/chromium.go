// Package chromium runs Debian's headless Chromium for the tests that render the dashboard as a
// browser does (test/e2e's dashboard test, test/walkthrough's newcomer walk-through).
package chromium

import (
	"bytes"
	"context"
	"os/exec"
	"time"
)

// Path is Debian's package's binary; tools/system-deps.sh installs it.
const Path = "/usr/bin/chromium"

// Run runs headless Chromium with args (e.g. --dump-dom URL, --screenshot=FILE URL) and its
// profile in userDataDir, for at most 90 s, and returns its stdout and stderr. Background traffic,
// updates and sync are off; page scripts get 5 s of virtual time.
func Run(userDataDir string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	flags := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + userDataDir, "--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, Path, flags...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
