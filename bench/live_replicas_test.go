package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

// TestReplicaConfigs: each replica's config is the config beside it (its relative paths hold)
// with a state section: the first embeds NATS, the others connect to it; with --state none,
// the config alone.
func TestReplicaConfigs(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "least-load.yaml")
	src, err := os.ReadFile("../examples/least-load.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base, append(src, []byte("endpoints: {static: [{address: 127.0.0.1:1}]}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{StateNATS, StateNone} {
		o := &LiveOptions{Replicas: 3, State: state}
		files, err := o.replicaConfigs(base)
		if err != nil || len(files) != 3 {
			t.Fatalf("%s: %v files, err %v", state, files, err)
		}
		var url string
		for i, f := range files {
			if filepath.Dir(f) != dir {
				t.Errorf("%s: replica %d's config %s is not beside the config", state, i, f)
			}
			cfg, err := config.Load(f)
			if err != nil {
				t.Fatalf("%s: replica %d: %v", state, i, err)
			}
			s := cfg.State
			switch {
			case state == StateNone && s != nil:
				t.Errorf("none: replica %d has a state section %+v", i, *s)
			case state == StateNone:
			case i == 0 && (s == nil || s.NATS.Embedded == nil || s.Replica != "replica-0"):
				t.Errorf("replica 0's state section %+v: want the embedded NATS", s)
			case i == 0:
				url = "nats://" + s.NATS.Embedded.Listen
			case s == nil || s.NATS.URL != url || !strings.HasPrefix(s.Replica, "replica-"):
				t.Errorf("replica %d's state section %+v: want the URL %s", i, s, url)
			}
			_ = os.Remove(f)
		}
	}
	if got := (&LiveOptions{Replicas: 4}).replicasText(); !strings.Contains(got, "sharing a state plane") {
		t.Errorf("replicasText %q", got)
	}
}
