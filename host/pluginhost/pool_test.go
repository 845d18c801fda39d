package pluginhost

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/rs/zerolog"
)

func TestPoolSharesByFingerprint(t *testing.T) {
	pool := NewPool()
	ctx := context.Background()
	spec := Spec{Name: "queue", Type: "queue-scorer", Stage: sdk.StageScorer}
	a, reused, err := pool.Acquire(ctx, spec, zerolog.Nop())
	if err != nil || reused {
		t.Fatalf("first Acquire: reused %v, err %v", reused, err)
	}
	b, reused, err := pool.Acquire(ctx, spec, zerolog.Nop())
	if err != nil || !reused || b != a {
		t.Fatalf("second Acquire of the same spec: same plugin %v, reused %v, err %v", b == a, reused, err)
	}
	other := spec
	other.Name = "queue-2"
	c, reused, err := pool.Acquire(ctx, other, zerolog.Nop())
	if err != nil || reused || c == a {
		t.Fatalf("another name must launch its own plugin: reused %v, err %v", reused, err)
	}
	if pool.Len() != 2 {
		t.Errorf("pool holds %d plugins, want 2", pool.Len())
	}
	pool.Release(a)
	if a.Client() == nil {
		t.Fatal("released once of twice: the plugin must still serve")
	}
	pool.Release(b)
	if a.Client() != nil {
		t.Error("released as often as acquired: the plugin must be stopped")
	}
	pool.Release(c)
	if pool.Len() != 0 {
		t.Errorf("pool holds %d plugins after every release, want 0", pool.Len())
	}
	// Once stopped, the same spec launches afresh.
	d, reused, err := pool.Acquire(ctx, spec, zerolog.Nop())
	if err != nil || reused || d == a {
		t.Fatalf("Acquire after the last release: reused %v, err %v", reused, err)
	}
	pool.Release(d)
}

func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "scorer")
	write := func(content string) {
		if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("#!/bin/true\nv1")
	base := Spec{Name: "s", Type: "latency-scorer", Stage: sdk.StageScorer, Path: bin, Params: []byte(`{"a":1,"b":[1,2]}`)}
	fp := func(s Spec) string {
		t.Helper()
		f, err := Fingerprint(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	want := fp(base)
	same := base
	same.Params = []byte(` { "b": [1, 2], "a": 1 } `)
	if fp(same) != want {
		t.Error("key order and spacing of the parameters changed the fingerprint")
	}
	// A pin the binary satisfies runs the same thing, in either case of its hex digits.
	sum, err := Checksum(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range []string{sum, strings.ToUpper(sum)} {
		pinned := base
		pinned.SHA256 = pin
		if fp(pinned) != want {
			t.Errorf("the binary's own sha256 %s changed the fingerprint", pin)
		}
	}
	changes := map[string]func(*Spec){
		"a pin the binary fails": func(s *Spec) { s.SHA256 = strings.Repeat("0", 64) },
		"parameters":             func(s *Spec) { s.Params = []byte(`{"a":2,"b":[1,2]}`) },
		"name":                   func(s *Spec) { s.Name = "t" },
		"args":                   func(s *Spec) { s.Args = []string{"-v"} },
		"env":                    func(s *Spec) { s.Env = []string{"GOMAXPROCS=1"} },
		"version":                func(s *Spec) { s.Version = ">=1.0.0" },
	}
	for what, change := range changes {
		s := base
		change(&s)
		if fp(s) == want {
			t.Errorf("a change of %s kept the fingerprint", what)
		}
	}
	write("#!/bin/true\nv2, rebuilt") // rebuilt at the same path (another size, whatever the mtime granularity)
	if fp(base) == want {
		t.Error("a new binary at the same path kept the fingerprint")
	}
	missing := base
	missing.Path = filepath.Join(dir, "absent")
	if _, err := Fingerprint(missing); err == nil {
		t.Error("Fingerprint of a missing binary: want an error")
	}
}
