package endpoints

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "endpoints:\n  - {id: a, address: 127.0.0.1:8000}\n")
	changes := make(chan []Endpoint, 10)
	errs := make(chan error, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, p, func(eps []Endpoint) { changes <- eps }, func(err error) { errs <- err })
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch returned %v", err)
			}
		case <-time.After(deadline):
			t.Error("Watch did not return after its context ended")
		}
	}()

	// next waits for a report; a change and an error are told apart by want.
	next := func(what string, wantChange bool) (eps []Endpoint, err error) {
		t.Helper()
		select {
		case eps = <-changes:
			if !wantChange {
				t.Fatalf("%s: unexpected change to %+v", what, eps)
			}
		case err = <-errs:
			if wantChange {
				t.Fatalf("%s: unexpected error %v", what, err)
			}
		case <-time.After(deadline):
			t.Fatalf("timed out waiting for %s", what)
		}
		return eps, err
	}

	// An editor's save: write a temporary file, rename it over. The watch may not be set up yet:
	// save again, each time with other bytes, until it reports.
	tmp := filepath.Join(dir, ".endpoints.yaml.swp")
	var eps []Endpoint
	for i := 0; eps == nil; i++ {
		content := fmt.Sprintf("# save %d\nendpoints:\n  - {id: b, address: 127.0.0.1:8001}\n", i)
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		select {
		case eps = <-changes:
		case err := <-errs:
			t.Fatalf("unexpected error %v", err)
		case <-time.After(time.Second):
			if i > 10 {
				t.Fatal("timed out waiting for a rename over the file")
			}
		}
	}
	if len(eps) != 1 || eps[0].ID != "b" {
		t.Errorf("after the rename: %+v", eps)
	}

	// A bad file is reported; no change is.
	writeFile(t, dir, "endpoints:\n  - {id: c}\n")
	if _, err := next("a bad file", false); !strings.Contains(err.Error(), p+":2: endpoints[0].address") {
		t.Errorf("error = %v, want one naming the file, line and field", err)
	}

	// An in-place rewrite with a fixed list.
	writeFile(t, dir, "endpoints:\n  - {id: c, address: 127.0.0.1:8002}\n  - {id: d, address: 127.0.0.1:8003}\n")
	if eps, _ = next("a rewrite", true); len(eps) != 2 || eps[0].ID != "c" || eps[1].ID != "d" {
		t.Errorf("after the rewrite: %+v", eps)
	}

	// Other files of the directory do not concern the watch.
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case eps := <-changes:
		t.Errorf("a neighbour's write reported a change to %+v", eps)
	case err := <-errs:
		t.Errorf("a neighbour's write reported %v", err)
	case <-time.After(2 * WatchDebounce):
	}
}

func TestWatchMissingDirectory(t *testing.T) {
	err := Watch(context.Background(), filepath.Join(t.TempDir(), "no", "such", "endpoints.yaml"),
		func([]Endpoint) {}, func(error) {})
	if err == nil || !strings.Contains(err.Error(), "watching") {
		t.Errorf("error = %v, want one saying what could not be watched", err)
	}
}

// TestWatchUpdatesASet wires Watch to Set.Update as the router does.
func TestWatchUpdatesASet(t *testing.T) {
	_, ts := newFakeEngine(t, vllmBody(1, 0, 0))
	p := writeFile(t, t.TempDir(), "endpoints:\n  - {id: a, address: "+addr(ts)+"}\n")
	eps, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(fastConfig(), eps)
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Watch(ctx, p, func(eps []Endpoint) { _ = s.Update(eps) }, func(err error) { t.Error(err) })
	}()
	defer func() { cancel(); <-done }()
	// Rewrite until the watch reports (the first write may precede it), each time with other bytes.
	added := func() bool { st, ok := s.Get("b"); return ok && !st.ScrapedAt.IsZero() }
	end := time.Now().Add(deadline)
	for i := 0; !added(); i++ {
		if time.Now().After(end) {
			t.Fatal("timed out waiting for b to be added through the file")
		}
		writeFile(t, filepath.Dir(p), fmt.Sprintf("# %d\nendpoints:\n  - {id: a, address: %s}\n  - {id: b, address: %s}\n",
			i, addr(ts), addr(ts)))
		for wait := time.Now().Add(time.Second); !added() && time.Now().Before(wait); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if st, _ := s.Get("a"); st.ScrapedAt.IsZero() {
		t.Errorf("a lost its state: %+v", st)
	}
}
