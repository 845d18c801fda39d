package pluginhost

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// TestKilledPluginExitIsNotAnError: go-plugin's exit line for a plugin the host killed is
// debug, not error (it raced the rejection message of `foresight check` onto stderr); any other
// exit error stays an error.
func TestKilledPluginExitIsNotAnError(t *testing.T) {
	var buf bytes.Buffer
	l := newZlog(zerolog.New(&buf), hclog.Info)
	l.Error("plugin process exited", "path", "/bin/p", "pid", 7, "error", errors.New("signal: killed"))
	if buf.Len() != 0 {
		t.Errorf("a killed plugin's exit was logged at info or above: %s", buf.String())
	}
	l.Error("plugin process exited", "path", "/bin/p", "pid", 7, "error", errors.New("exit status 2"))
	if !strings.Contains(buf.String(), `"level":"error"`) || !strings.Contains(buf.String(), "exit status 2") {
		t.Errorf("a crashed plugin's exit is not an error line: %q", buf.String())
	}
}
