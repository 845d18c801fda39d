package sdk

import (
	"path/filepath"
	"testing"
)

func TestResolvePath(t *testing.T) {
	t.Setenv(ConfigDirEnv, "/etc/foresight")
	for in, want := range map[string]string{
		"":                "",
		"/var/lib/models": "/var/lib/models",
		"models":          filepath.Join("/etc/foresight", "models"),
		"../state/models": "/etc/state/models",
	} {
		if got := ResolvePath(in); got != want {
			t.Errorf("ResolvePath(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv(ConfigDirEnv, "")
	if got := ResolvePath("models"); got != "models" {
		t.Errorf("without the variable: %q", got)
	}
}
